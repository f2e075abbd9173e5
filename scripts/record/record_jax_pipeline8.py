# An 8-stage pipeline on 8 CPU devices (JAX, --xla_force_host_platform_device_count=8): each
# stage applies its layer (a dot with its weights, a bias, tanh), then the activations move to
# the next stage with ppermute (collective-permute with source_target_pairs {{0,1},...,{6,7}}),
# eight times, so that the first micro-batch has passed every stage. Only the HLO is kept.
# Run: python3 record_jax_pipeline8.py OUT (jax 0.10.2; about 3 s); keep
# OUT/xla_dump/*jit_pipeline.cpu_after_optimizations.txt
import os, sys
out = sys.argv[1]
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count=8 --xla_dump_to={out}/xla_dump --xla_dump_hlo_as_text"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
try:
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map

devs = jax.devices()
mesh = Mesh(devs, ("stage",))
n = len(devs)

def pipeline(w, b, x):
    for _ in range(n):
        x = jnp.tanh(x @ w[0] + b[0])
        x = jax.lax.ppermute(x, "stage", [(i, i + 1) for i in range(n - 1)])
    return x

f = jax.jit(shard_map(pipeline, mesh=mesh, in_specs=(P("stage"), P("stage"), P("stage")), out_specs=P("stage")))
w = jnp.ones((n, 64, 64)) * 0.01
b = jnp.zeros((n, 64))
x = jnp.ones((n * 16, 64))
f(w, b, x).block_until_ready()
