# 4 ranks on CPU with gloo: 2 pipeline stages (ranks 0,1 -> 2,3) x 2 data-parallel replicas.
# Stage 0 sends its activations to stage 1 (send/recv), stage 1 sends gradients back, each
# stage all-reduces its gradients over its replicas. Rank 3 computes 1.6x as much (the straggler).
# One Kineto trace per rank, gzip as Kineto writes it for a .gz name: OUT/rank{R}.pt.trace.json.gz
# Run: python3 record_gloo_pipeline.py OUT [SLOW_RANK|none] [STEPS] [FACTOR] (CPU only, torch
# 2.15; about 10 s on 2 cores). SLOW_RANK (default 3) is the stage-1 rank that computes FACTOR
# (default 1.6) times as much; "none" records the same job balanced. STEPS (default 2) steps are
# profiled. tests/data/torch-gloo-pair holds the job balanced and with rank 3 computing 3x, 6
# steps each, recorded one after the other (on 2 cores the four ranks share the CPUs, so a
# smaller factor drowns in the run-to-run variation):
#   python3 record_gloo_pipeline.py tests/data/torch-gloo-pair/even none 6
#   python3 record_gloo_pipeline.py tests/data/torch-gloo-pair/slow3 3 6 3
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.profiler import profile, ProfilerActivity, schedule

def run(rank, world, out, slow, steps, factor):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29531")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    stage = rank // 2
    dp = dist.new_group([0, 1])
    dp1 = dist.new_group([2, 3])
    my_dp = dp if stage == 0 else dp1
    peer = rank + 2 if stage == 0 else rank - 2
    # Stage 0 has one layer more, as stage 1 also computes the loss: the stages balanced.
    layer = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(5 if stage == 0 else 4)])
    x = torch.randn(256, 512)
    extra = round(256 * (factor - 1)) if rank == slow else 0  # 256 + 154 rows: 1.6x the work
    def step():
        if stage == 0:
            y = layer(x)
            dist.send(y.detach(), dst=peer)
            g = torch.empty_like(y)
            dist.recv(g, src=peer)
            y.backward(g)
        else:
            a = torch.empty(256, 512)
            dist.recv(a, src=peer)
            a.requires_grad_(True)
            y = layer(torch.cat([a] * (1 + extra // 256) + [a[:extra % 256]]) if extra else a)
            loss = y.pow(2).mean()
            loss.backward()
            dist.send(a.grad, dst=peer)
        for p in layer.parameters():
            dist.all_reduce(p.grad, group=my_dp)
            p.grad = None
    for _ in range(2):
        step()
    path = os.path.join(out, f"rank{rank}.pt.trace.json.gz")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=steps),
                 record_shapes=True, on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(steps + 1):
            step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    out = sys.argv[1]
    arg = sys.argv[2] if len(sys.argv) > 2 else "3"
    slow = -1 if arg == "none" else int(arg)
    if slow not in (-1, 2, 3):
        sys.exit("SLOW_RANK must be 2 or 3 (a rank of stage 1, where the extra rows are computed) or none")
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    factor = float(sys.argv[4]) if len(sys.argv) > 4 else 1.6
    os.makedirs(out, exist_ok=True)
    mp.spawn(run, args=(4, out, slow, steps, factor), nprocs=4)
