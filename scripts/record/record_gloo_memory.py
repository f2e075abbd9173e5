# 2 data-parallel ranks on CPU with gloo, profiled with memory: each rank trains a small MLP on
# its own batch and all-reduces the gradients; the profiler records every allocation and free
# (profile_memory=True), which Kineto writes as `[memory]` instant events carrying the
# allocator's totals ("Total Allocated", "Total Reserved") after each one.
# One Kineto trace per rank, gzip as Kineto writes it for a .gz name: OUT/rank{R}.pt.trace.json.gz
# Run: python3 record_gloo_memory.py OUT (CPU only, torch 2.15; a few seconds on 2 cores)
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.profiler import profile, ProfilerActivity, schedule

def run(rank, world, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 256), torch.randn(128, 16)
    def step():
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        opt.zero_grad(set_to_none=True)
    step()
    path = os.path.join(out, f"rank{rank}.pt.trace.json.gz")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2),
                 profile_memory=True, on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(3):
            step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mp.spawn(run, args=(2, out), nprocs=2)
