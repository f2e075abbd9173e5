# A PyTorch Execution Trace (the Chakra host graph) with the Kineto profile of the same step:
# 2 ranks on CPU with gloo, data parallel: a 3-layer MLP's forward and backward, its gradients
# all-reduced (one all_reduce per parameter, as a plain DDP-less loop does), an SGD update.
# Writes OUT/rank{R}.et.json.gz (torch.profiler.ExecutionTraceObserver's JSON, gzip) and
# OUT/rank{R}.pt.trace.json.gz (Kineto), the two linked by the record-function ids (rf_id).
# Run: python3 record_torch_et.py OUT (CPU only, torch 2.15; a few seconds on 2 cores)
import gzip, os, shutil, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.profiler import profile, ProfilerActivity, ExecutionTraceObserver

def run(rank, world, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29541")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
    step()  # warm-up, not recorded
    et = ExecutionTraceObserver()
    et.register_callback(os.path.join(out, f"rank{rank}.et.json"))
    with profile(activities=[ProfilerActivity.CPU], execution_trace_observer=et) as prof:
        step()
    prof.export_chrome_trace(os.path.join(out, f"rank{rank}.pt.trace.json.gz"))
    et_path = os.path.join(out, f"rank{rank}.et.json")
    with open(et_path, "rb") as f, gzip.open(et_path + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    os.remove(et_path)
    dist.destroy_process_group()

if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mp.spawn(run, args=(2, out), nprocs=2)
