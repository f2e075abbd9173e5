# A 48-layer attention stack (64-wide, batch sharded 8 ways) trained for one step on 8 CPU devices,
# its HLO modules dumped as text: the module after shardy-xla holds 7,280 operators (6,269 in the
# entry computation), the one after optimizations 16,554. Used to measure the strategy view at
# size (BENCHMARKS.md); not kept as a fixture (1-2 MB a module).
# Run: python3 record_jax_transformer.py OUT [LAYERS] (jax 0.10.2; a few seconds at 48 layers; 780
# layers give about 10^5 operators after a few minutes of tracing: stop it once the dump is written)
import os, sys
out = sys.argv[1]
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count=8 --xla_dump_to={out}/xla_dump --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=shardy-xla"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
mesh = Mesh(jax.devices(), ("data",))
L, D = (int(sys.argv[2]) if len(sys.argv) > 2 else 48), 64
def init(key):
    ks = jax.random.split(key, L * 4)
    return [dict(q=jax.random.normal(ks[4*i], (D, D)) * 0.02, k=jax.random.normal(ks[4*i+1], (D, D)) * 0.02,
                 v=jax.random.normal(ks[4*i+2], (D, D)) * 0.02, o=jax.random.normal(ks[4*i+3], (D, D)) * 0.02) for i in range(L)]
def loss(params, x):
    for p in params:
        q, k, v = x @ p["q"], x @ p["k"], x @ p["v"]
        a = jax.nn.softmax(q @ k.swapaxes(-1, -2) / 8.0)
        x = jax.nn.gelu(x + (a @ v) @ p["o"])
        x = x / jnp.sqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6)
    return jnp.mean(x ** 2)
@jax.jit
def step(params, x):
    l, g = jax.value_and_grad(loss)(params, x)
    return jax.tree.map(lambda a, b: a - 0.01 * b, params, g), l
params = jax.device_put(init(jax.random.key(0)), NamedSharding(mesh, P()))
x = jax.device_put(jnp.ones((64, 16, D)), NamedSharding(mesh, P("data")))
print(float(step(params, x)[1]))
