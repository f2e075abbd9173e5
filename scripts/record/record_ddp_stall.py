# 8 ranks of PyTorch DistributedDataParallel on CPU with gloo, each training a small MLP on its
# own batch; DDP all-reduces the gradients in buckets during the backward pass. With STALL_RANK
# given, that rank sleeps STALL_MS inside record_function("extra_work") in each step, before its
# forward pass: the others wait for it in the all-reduce. One Kineto trace per rank, gzip as
# Kineto writes it for a .gz name: OUT/rank{R}.pt.trace.json.gz
# Run: python3 record_ddp_stall.py OUT [STALL_RANK|none] [STEPS] [STALL_MS] (CPU only, torch
# 2.15; about 20 s on 2 cores). tests/data/torch-ddp-stall holds the job balanced and with rank 5
# stalling 30 ms, 6 steps each, recorded one after the other:
#   python3 record_ddp_stall.py tests/data/torch-ddp-stall/even none 6
#   python3 record_ddp_stall.py tests/data/torch-ddp-stall/stall5 5 6 30
# On a machine with fewer cores than ranks the ranks share the CPUs, so while one sleeps the
# others run faster than they would on cores of their own: the balanced run is close to, not
# exactly, the stalling run without its stall.
import os, sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import profile, ProfilerActivity, record_function, schedule

WORLD = 8

def run(rank, world, out, stall, steps, stall_ms):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                    torch.nn.ReLU(), torch.nn.Linear(512, 10)), bucket_cap_mb=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(rank)
    x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))

    def step():
        if rank == stall:
            with record_function("extra_work"):
                time.sleep(stall_ms / 1000)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(2):
        step()
    path = os.path.join(out, f"rank{rank}.pt.trace.json.gz")
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=steps),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(steps + 1):
            step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    out = sys.argv[1]
    arg = sys.argv[2] if len(sys.argv) > 2 else "5"
    stall = -1 if arg == "none" else int(arg)
    if not -1 <= stall < WORLD:
        sys.exit(f"STALL_RANK must be a rank below {WORLD} or none")
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    stall_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    os.makedirs(out, exist_ok=True)
    mp.spawn(run, args=(WORLD, out, stall, steps, stall_ms), nprocs=WORLD)
