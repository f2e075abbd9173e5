# A ring pipeline on 8 CPU devices (JAX, --xla_force_host_platform_device_count=8), as JAX's own
# shard_map pipeline examples write it: each stage applies its layer, then the activations move
# around the ring with ppermute perm = [(i, (i + 1) % n)] (collective-permute with
# source_target_pairs {{0,1},...,{6,7},{7,0}}), eight times. Two steps are profiled with
# jax.profiler (its XPlane alone), and XLA dumps the module after optimizations beside it.
# Run: python3 record_jax_ring8.py OUT (jax 0.10.2; about 5 s); keep OUT/plugins/profile/*/*.xplane.pb
# and OUT/xla_dump/*jit_ring.cpu_after_optimizations.txt
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

def ring(w, x):
    for _ in range(n):
        x = jnp.tanh(x @ w[0])
        x = jax.lax.ppermute(x, "stage", [(i, (i + 1) % n) for i in range(n)])
    return x

f = jax.jit(shard_map(ring, mesh=mesh, in_specs=(P("stage"), P("stage")), out_specs=P("stage")))
w = jnp.ones((n, 32, 32)) * 0.01
x = jnp.ones((n * 8, 32))
f(w, x).block_until_ready()
jax.profiler.start_trace(out)
for step in range(2):
    with jax.profiler.StepTraceAnnotation("train", step_num=step):
        f(w, x).block_until_ready()
jax.profiler.stop_trace()
