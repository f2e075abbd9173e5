# One data-parallel training step on 8 CPU devices (JAX, --xla_force_host_platform_device_count=8):
# a 3-layer MLP whose batch is sharded 8 ways over a mesh axis "data" and whose parameters are
# replicated; the gradients are averaged (all-reduce in the HLO) and the parameters updated. XLA
# dumps its HLO modules as text: before optimizations only the parameters carry a sharding (x and
# y sharding={devices=[8,1]<=[8]}, the weights {replicated}); after the shardy-xla pass every
# operator carries its propagated sharding (each dot over the batch [8,1]); after optimizations
# the SPMD-partitioned module holds the all-reduces.
# Run: python3 record_jax_data_parallel.py OUT (jax 0.10.2; about 3 s); keep
# OUT/xla_dump/*jit_train_step.before_optimizations.txt, *after_shardy-xla.before_spmd-partitioning.txt
# and *jit_train_step.cpu_after_optimizations.txt
import os, sys
out = sys.argv[1]
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count=8 --xla_dump_to={out}/xla_dump --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=shardy-xla"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

mesh = Mesh(jax.devices(), ("data",))
batch, replicated = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())

def init(key):
    sizes = [(64, 256), (256, 256), (256, 10)]
    keys = jax.random.split(key, len(sizes))
    return [(jax.random.normal(k, s) * 0.05, jnp.zeros(s[1])) for k, s in zip(keys, sizes)]

def loss(params, x, y):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return jnp.mean((x @ w + b - y) ** 2)

@jax.jit
def train_step(params, x, y):
    l, grads = jax.value_and_grad(loss)(params, x, y)
    params = jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)
    return params, l

params = jax.device_put(init(jax.random.key(0)), replicated)
x = jax.device_put(jnp.ones((128, 64)), batch)
y = jax.device_put(jnp.ones((128, 10)), batch)
params, l = train_step(params, x, y)
print(float(l))
