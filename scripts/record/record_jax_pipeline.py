# A 4-stage pipeline on 4 CPU devices (JAX, --xla_force_host_platform_device_count=4): each
# stage multiplies by its weights, then the activations move to the next stage with ppermute
# (collective-permute with source_target_pairs {{0,1},{1,2},{2,3}} in the HLO). Three steps
# are profiled with jax.profiler (XPlane, its Chrome trace and a Perfetto trace), and XLA
# dumps its HLO modules beside them.
# Run: python3 record_jax_pipeline.py OUT (jax 0.10.2; about 3 s); keep OUT/plugins and
# OUT/xla_dump/*jit_stage.cpu_after_optimizations.txt
import os, sys
out = sys.argv[1]
os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count=4 --xla_dump_to={out}/xla_dump"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
try:
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map

devs = jax.devices()
mesh = Mesh(devs, ("stage",))
n = len(devs)

def stage(w, x):
    for _ in range(n):
        x = jnp.tanh(x @ w[0])
        x = jax.lax.ppermute(x, "stage", [(i, i + 1) for i in range(n - 1)])
    return x

f = jax.jit(shard_map(stage, mesh=mesh, in_specs=(P("stage"), P("stage")), out_specs=P("stage")))
w = jnp.ones((n, 128, 128)) * 0.01
x = jnp.ones((n * 64, 128))
f(w, x).block_until_ready()
jax.profiler.start_trace(out, create_perfetto_trace=True)
for step in range(3):
    with jax.profiler.StepTraceAnnotation("train", step_num=step):
        f(w, x).block_until_ready()
jax.profiler.stop_trace()
