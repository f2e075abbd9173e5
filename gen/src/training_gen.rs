//! `gen:training`: profiles of data-, pipeline- and hybrid-parallel DNN training (GPipe
//! schedule: every micro-batch forward through the stages, then every micro-batch backward,
//! then an all-reduce among the replicas of each stage and an optimizer step), with injectable
//! stragglers, slow links and unbalanced stages and a clock skew per device. Written as the
//! Chrome trace files Kineto (a gzip file per rank) or JAX (one file, `/device:GPU:N` lanes)
//! writes, so that the files take the whole path; read in memory, the same operators build the
//! model directly.

use std::io::Write;
use std::path::Path;

use exaviz_model::rng::SplitMix64;
use exaviz_model::source::SourceError;
use exaviz_model::training::{Builder, Class, RawOp, Training};

/// The generator's options.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub devices: u32,
    pub stages: u32,
    pub microbatches: u32,
    pub layers: u32,
    pub steps: u32,
    /// This rank computes 1.6x slower.
    pub straggler: Option<u32>,
    /// Sends from this rank take 4x longer.
    pub slow_link: Option<u32>,
    /// This stage holds twice its share of layers.
    pub unbalanced: Option<u32>,
    /// The largest clock offset of a device, in microseconds.
    pub skew_us: u32,
    pub jax: bool,
    pub seed: u64,
}

pub const OPTIONS: &[&str] = &[
    "devices",
    "stages",
    "microbatches",
    "layers",
    "steps",
    "straggler",
    "slow_link",
    "unbalanced",
    "skew",
    "flavour",
    "seed",
];

impl Spec {
    pub fn parse(q: &exaviz_model::query::Query) -> Result<Spec, SourceError> {
        let input = q.input();
        let get = |k: &str| q.get(k);
        let n = |k: &str, default: u64, max: u64| q.count(k, default, max);
        let opt = |k: &str, max: u64| q.count_opt(k, max).map(|v| v.map(|x| x as u32));
        let s = Spec {
            devices: n("devices", 8, 100_000)? as u32,
            stages: n("stages", 2, 1024)? as u32,
            microbatches: n("microbatches", 4, 4096)? as u32,
            layers: n("layers", 8, 4096)? as u32,
            steps: n("steps", 2, 1000)? as u32,
            straggler: opt("straggler", 1 << 20)?,
            slow_link: opt("slow_link", 1 << 20)?,
            unbalanced: opt("unbalanced", 1024)?,
            skew_us: n("skew", 200, 1_000_000)? as u32,
            jax: match get("flavour").unwrap_or("kineto") {
                "kineto" => false,
                "jax" => true,
                v => return Err(SourceError::invalid(input, format!("flavour={v}: expected kineto or jax"))),
            },
            seed: n("seed", 1, u64::MAX)?,
        };
        let bad = |m: String| Err(SourceError::invalid(input, m));
        if s.devices == 0 || s.stages == 0 || s.microbatches == 0 || s.steps == 0 {
            return bad("devices, stages, microbatches and steps must be at least 1".into());
        }
        if !s.devices.is_multiple_of(s.stages) {
            return bad(format!("devices={} is not a multiple of stages={}", s.devices, s.stages));
        }
        if s.layers == 0 || !s.layers.is_multiple_of(s.stages) {
            return bad(format!("layers={} is not a multiple of stages={}", s.layers, s.stages));
        }
        for (k, v, max) in [
            ("straggler", s.straggler, s.devices),
            ("slow_link", s.slow_link, s.devices),
            ("unbalanced", s.unbalanced, s.stages),
        ] {
            if v.is_some_and(|v| v >= max) {
                return bad(format!("{k}={} is not below {max}", v.unwrap_or(0)));
            }
        }
        let ops = u64::from(s.devices)
            * u64::from(s.steps)
            * u64::from(s.microbatches)
            * u64::from(2 * s.layers / s.stages + 4);
        if ops > 200_000_000 {
            return bad(format!("about {ops} operators is above the limit of 200,000,000"));
        }
        Ok(s)
    }
}

/// One simulated device.
pub struct GenDevice {
    pub rank: u32,
    pub stage: u32,
    pub ops: Vec<RawOp>,
    pub memory: u64,
    /// Step spans on this device's clock.
    pub steps: Vec<(u64, u64)>,
    /// How far this device's clock is ahead (ns).
    pub skew: u64,
}

const FWD_NS: f64 = 400_000.0;
const XFER_NS: u64 = 60_000;
const FLOPS_PER_LAYER: f32 = 1.2e11;

/// The simulation's state: every device's operators so far and the time it is free.
struct Sim<'a> {
    s: &'a Spec,
    devs: Vec<GenDevice>,
    free: Vec<u64>,
    rng: SplitMix64,
    names: Names,
}

impl Sim<'_> {
    /// `op` on `d` from the time `d` is free.
    fn push(&mut self, d: u32, op: RawOp) {
        let start = self.free[d as usize];
        self.free[d as usize] = op.end;
        self.devs[d as usize].ops.push(RawOp { start, ..op });
    }

    /// Layer `l` forward or backward on `d` (the straggler 1.6x slower, 3% jitter).
    fn compute(&mut self, d: u32, l: u32, back: bool) {
        let slow = if Some(d) == self.s.straggler { 1.6 } else { 1.0 };
        let k = if back { 2.0 } else { 1.0 };
        let dur = (FWD_NS * k * slow * (0.97 + 0.06 * f64::from(self.rng.unit()))) as u64;
        let class = if back { Class::Backward } else { Class::Forward };
        let end = self.free[d as usize] + dur;
        let op = RawOp {
            name: self.names.layer(l, back),
            class,
            start: 0,
            end,
            flops: FLOPS_PER_LAYER * k as f32,
            bytes: 0,
            peer_rank: None,
        };
        self.push(d, op);
    }

    /// A send from `from` and its receive on `to`, ending together when the data arrives.
    fn p2p(&mut self, from: u32, to: u32, back: bool) {
        let xfer = if Some(from) == self.s.slow_link { 4 * XFER_NS } else { XFER_NS };
        let end = self.free[from as usize].max(self.free[to as usize]) + xfer;
        let (sn, rn) = self.names.p2p(back);
        self.push(
            from,
            RawOp { name: sn, class: Class::Send, start: 0, end, flops: 0.0, bytes: 64 << 20, peer_rank: Some(to) },
        );
        self.push(
            to,
            RawOp { name: rn, class: Class::Recv, start: 0, end, flops: 0.0, bytes: 64 << 20, peer_rank: Some(from) },
        );
    }

    /// The all-reduce of a stage's replicas (ending together) and their optimizer steps.
    fn reduce(&mut self, group: &[u32], layers: usize) {
        if group.len() > 1 {
            let bytes = 4 * 25_000_000 * layers as u64 / u64::from(self.s.layers.max(1));
            let slow = group.iter().any(|&d| Some(d) == self.s.slow_link);
            let cost = (200_000.0 * (bytes as f64 / 1e8).max(0.2) * if slow { 4.0 } else { 1.0 }) as u64;
            let end = group.iter().map(|&d| self.free[d as usize]).max().unwrap_or(0) + cost;
            for &d in group {
                let op = RawOp {
                    name: self.names.allreduce(),
                    class: Class::AllReduce,
                    start: 0,
                    end,
                    flops: 0.0,
                    bytes,
                    peer_rank: None,
                };
                self.push(d, op);
            }
        }
        for &d in group {
            let end = self.free[d as usize] + 80_000;
            let op = RawOp {
                name: self.names.optimizer(),
                class: Class::Compute,
                start: 0,
                end,
                flops: 0.0,
                bytes: 0,
                peer_rank: None,
            };
            self.push(d, op);
        }
    }
}

/// Simulates the run: devices in rank order (rank = stage x replicas + replica).
pub fn simulate(s: &Spec) -> Vec<GenDevice> {
    let replicas = s.devices / s.stages;
    // Layers per stage: equal shares; the unbalanced stage holds its share twice.
    let share = s.layers / s.stages;
    let mut layers: Vec<Vec<u32>> = Vec::new();
    let mut next = 0u32;
    for k in 0..s.stages {
        let n = if Some(k) == s.unbalanced { 2 * share } else { share };
        layers.push((next..next + n).collect());
        next += n;
    }
    let mut rng = SplitMix64(s.seed);
    let skew: Vec<u64> =
        (0..s.devices).map(|_| (f64::from(rng.unit()) * f64::from(s.skew_us) * 1000.0) as u64).collect();
    let devs = (0..s.devices)
        .map(|rank| GenDevice { rank, stage: rank / replicas, ops: Vec::new(), memory: 0, steps: Vec::new(), skew: 0 })
        .collect();
    let mut sim = Sim { s, devs, free: vec![1_000_000u64; s.devices as usize], rng, names: Names::new(s.jax) };
    let rank = |stage: usize, r: u32| stage as u32 * replicas + r;
    let last = layers.len() - 1;
    for _step in 0..s.steps {
        let step_start: Vec<u64> = sim.free.clone();
        for r in 0..replicas {
            for _mb in 0..s.microbatches {
                for (st, ls) in layers.iter().enumerate() {
                    for &l in ls {
                        sim.compute(rank(st, r), l, false);
                    }
                    if st < last {
                        sim.p2p(rank(st, r), rank(st + 1, r), false);
                    }
                }
            }
            for _mb in 0..s.microbatches {
                for (st, ls) in layers.iter().enumerate().rev() {
                    for &l in ls.iter().rev() {
                        sim.compute(rank(st, r), l, true);
                    }
                    if st > 0 {
                        sim.p2p(rank(st, r), rank(st - 1, r), true);
                    }
                }
            }
        }
        for (st, ls) in layers.iter().enumerate() {
            let group: Vec<u32> = (0..replicas).map(|r| rank(st, r)).collect();
            sim.reduce(&group, ls.len());
        }
        for (d, dev) in sim.devs.iter_mut().enumerate() {
            let act = u64::from(s.microbatches) * layers[dev.stage as usize].len() as u64 * (96 << 20);
            dev.memory = dev.memory.max(act + (2 << 30));
            dev.steps.push((step_start[d], sim.free[d]));
        }
    }
    let mut devs = sim.devs;
    // Each device's clock is off by its skew.
    for (d, k) in devs.iter_mut().zip(&skew) {
        d.skew = *k;
        for o in &mut d.ops {
            o.start += k;
            o.end += k;
        }
        for st in &mut d.steps {
            st.0 += k;
            st.1 += k;
        }
    }
    devs
}

/// Operator names as each profiler writes them.
struct Names {
    jax: bool,
}

impl Names {
    fn new(jax: bool) -> Self {
        Self { jax }
    }
    fn layer(&self, l: u32, back: bool) -> String {
        match (self.jax, back) {
            (false, false) => format!("forward layer {l} (sm90_xmma_gemm)"),
            (false, true) => format!("backward layer {l} (sm90_xmma_gemm_bwd)"),
            (true, false) => format!("fusion.layer{l}"),
            (true, true) => format!("transpose(jvp(layer{l}))"),
        }
    }
    fn p2p(&self, back: bool) -> (String, String) {
        if self.jax {
            let n = if back { "collective-permute.2" } else { "collective-permute.1" };
            (n.into(), n.into())
        } else {
            let n = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)".to_string();
            (n.clone(), n)
        }
    }
    fn allreduce(&self) -> String {
        if self.jax { "all-reduce.1".into() } else { "ncclKernel_AllReduce_RING_LL_Sum_float".into() }
    }
    fn optimizer(&self) -> String {
        if self.jax { "optimizer adam update".into() } else { "Optimizer.step#Adam.step".into() }
    }
}

/// The model straight from the simulation (what reading the written files gives).
pub fn training(s: &Spec) -> Result<Training, String> {
    let devs = simulate(s);
    let mut b = Builder::default();
    b.source = if s.jax { "JAX (generated)" } else { "Kineto (generated)" }.into();
    for d in devs {
        let name = if s.jax { format!("device:GPU:{}", d.rank) } else { format!("rank {} GPU {}", d.rank, d.rank % 8) };
        let i = b.device(name, d.rank, None);
        b.memory(i, d.memory);
        for (k, &(a, e)) in d.steps.iter().enumerate() {
            b.step(format!("step {k}"), a, e);
        }
        for o in d.ops {
            b.op(i, o);
        }
    }
    b.finish()
}

fn collective_name(c: Class) -> &'static str {
    match c {
        Class::Send => "send",
        Class::Recv => "recv",
        Class::AllReduce => "allreduce",
        _ => "",
    }
}

/// Writes the run as Chrome trace files into `dir`: Kineto, `rank-N.pt.trace.json.gz` per rank;
/// JAX, `plugins/profile/run/host.trace.json.gz`. Each file goes through a temporary name.
pub fn write(s: &Spec, dir: &Path) -> std::io::Result<()> {
    let devs = simulate(s);
    std::fs::create_dir_all(dir)?;
    if s.jax {
        let run = dir.join("plugins/profile/run");
        std::fs::create_dir_all(&run)?;
        return write_gz(&run.join("host.trace.json.gz"), &mut |w| write_jax(w, &devs));
    }
    for d in &devs {
        write_gz(&dir.join(format!("rank-{}.pt.trace.json.gz", d.rank)), &mut |w| write_kineto(w, d, s.devices))?;
    }
    Ok(())
}

/// Writes gzip through a temporary name.
fn write_gz(path: &Path, body: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    let tmp = path.with_extension("partial");
    let f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    body(&mut enc)?;
    enc.finish()?.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// All devices in one file, as the JAX profiler writes a host's trace.
fn write_jax(w: &mut dyn Write, devs: &[GenDevice]) -> std::io::Result<()> {
    write!(w, "{{\"displayTimeUnit\": \"ns\", \"traceEvents\": [")?;
    let mut first = true;
    let mut sep = |w: &mut dyn Write| -> std::io::Result<()> {
        if !std::mem::take(&mut first) {
            writeln!(w, ",")?;
        }
        Ok(())
    };
    for d in devs {
        let pid = d.rank + 1;
        sep(w)?;
        write!(w, r#"{{"ph":"M","name":"process_name","pid":{pid},"args":{{"name":"/device:GPU:{}"}}}}"#, d.rank)?;
        sep(w)?;
        write!(w, r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":1,"args":{{"name":"XLA Ops"}}}}"#)?;
        sep(w)?;
        write!(w, r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":2,"args":{{"name":"Steps"}}}}"#)?;
        sep(w)?;
        write!(
            w,
            r#"{{"ph":"C","name":"memory","pid":{pid},"ts":{},"args":{{"allocated":{}}}}}"#,
            us(d.steps[0].0),
            d.memory
        )?;
        for (k, &(a, e)) in d.steps.iter().enumerate() {
            sep(w)?;
            write!(w, r#"{{"ph":"X","name":"{k}","pid":{pid},"tid":2,"ts":{},"dur":{}}}"#, us(a), us(e - a))?;
        }
        for o in &d.ops {
            sep(w)?;
            let long = match (o.class, o.peer_rank) {
                (Class::Send, Some(p)) => format!("source_target_pairs={{{{{},{p}}}}}", d.rank),
                (Class::Recv, Some(p)) => format!("source_target_pairs={{{{{p},{}}}}}", d.rank),
                _ => o.name.clone(),
            };
            write!(
                w,
                r#"{{"ph":"X","name":"{}","pid":{pid},"tid":1,"ts":{},"dur":{},"args":{{"long_name":"{long}","flops":"{}"}}}}"#,
                o.name,
                us(o.start),
                us(o.end - o.start),
                o.flops
            )?;
        }
    }
    write!(w, "]}}")
}

/// One rank's file, as Kineto writes it.
fn write_kineto(w: &mut dyn Write, d: &GenDevice, world: u32) -> std::io::Result<()> {
    let gpu = d.rank % 8;
    write!(
        w,
        r#"{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": {}}}, "traceEvents": ["#,
        d.rank, world
    )?;
    write!(w, r#"{{"ph":"M","name":"process_name","pid":{gpu},"tid":0,"args":{{"name":"python3"}}}},"#)?;
    write!(w, r#"{{"ph":"M","name":"process_labels","pid":{gpu},"tid":0,"args":{{"labels":"GPU {gpu}"}}}},"#)?;
    write!(
        w,
        r#"{{"ph":"C","name":"memory","pid":{gpu},"tid":0,"ts":{},"args":{{"allocated":{}}}}}"#,
        us(d.steps[0].0),
        d.memory
    )?;
    for (k, &(a, e)) in d.steps.iter().enumerate() {
        writeln!(w, ",")?;
        write!(
            w,
            r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{k}","pid":4000,"tid":4000,"ts":{},"dur":{}}}"#,
            us(a),
            us(e - a)
        )?;
    }
    for o in &d.ops {
        writeln!(w, ",")?;
        let mut args = format!(r#""device":{gpu},"stream":7,"flops":{}"#, o.flops);
        let coll = collective_name(o.class);
        if !coll.is_empty() {
            args.push_str(&format!(r#","Collective name":"{coll}","In msg nelems":{},"dtype":"Float""#, o.bytes / 4));
        }
        match (o.class, o.peer_rank) {
            (Class::Send, Some(p)) => args.push_str(&format!(r#","Src Rank":{},"Dst Rank":{p}"#, d.rank)),
            (Class::Recv, Some(p)) => args.push_str(&format!(r#","Src Rank":{p},"Dst Rank":{}"#, d.rank)),
            _ => {}
        }
        write!(
            w,
            r#"{{"ph":"X","cat":"kernel","name":"{}","pid":{gpu},"tid":7,"ts":{},"dur":{},"args":{{{args}}}}}"#,
            o.name,
            us(o.start),
            us(o.end - o.start)
        )?;
    }
    write!(w, "]}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use exaviz_analysis::training::{Align, Rule, Thresholds, offsets, rules};

    fn spec(q: &str) -> Spec {
        Spec::parse(&exaviz_model::query::Query::parse("gen:training", q).unwrap()).unwrap()
    }

    /// The files written read back as the model the simulation builds, in both flavours.
    #[test]
    fn written_profiles_read_back_as_the_simulated_run() {
        for flavour in ["kineto", "jax"] {
            let s = spec(&format!("devices=8&stages=4&microbatches=3&layers=8&steps=2&straggler=5&flavour={flavour}"));
            let direct = training(&s).unwrap();
            let dir = std::env::temp_dir().join(format!("exaviz-train-{}-{flavour}", std::process::id()));
            write(&s, &dir).unwrap();
            let d = exaviz_datasets::open(dir.to_str().unwrap()).unwrap();
            std::fs::remove_dir_all(&dir).ok();
            let read = d.training.as_deref().unwrap();
            assert_eq!(read.devices, direct.devices, "{flavour}");
            assert_eq!(read.stages, 4);
            assert_eq!(read.ops.class, direct.ops.class, "{flavour}");
            assert_eq!(read.ops.start, direct.ops.start, "{flavour}");
            assert_eq!(read.ops.end, direct.ops.end, "{flavour}");
            assert_eq!(read.ops.peer, direct.ops.peer, "{flavour}");
            assert_eq!(read.ops.pair, direct.ops.pair, "{flavour}");
            assert_eq!(read.steps, direct.steps, "{flavour}");
            assert!(read.source.starts_with(if flavour == "jax" { "JAX" } else { "Kineto" }));
        }
    }

    /// The injected straggler, slow link and unbalanced stage are what the rules find.
    #[test]
    fn rules_find_what_was_injected() {
        let t = training(&spec("devices=16&stages=4&straggler=5&unbalanced=2")).unwrap();
        let f = rules(&t, &offsets(&t, Align::Full), Thresholds::default());
        let rank = |f: &exaviz_analysis::training::Finding| f.device.map(|d| t.devices[d as usize].rank);
        assert!(f.iter().any(|x| x.rule == Rule::Straggler && rank(x) == Some(5)), "{f:#?}");
        assert!(f.iter().any(|x| x.rule == Rule::SlowDevice && rank(x) == Some(5)), "{f:#?}");
        assert!(f.iter().any(|x| x.rule == Rule::HeavyStage && x.stage == Some(2)), "{f:#?}");
        assert_eq!(f.len(), 3, "nothing else: {:#?}", f.iter().map(|x| &x.message).collect::<Vec<_>>());
        let clean = training(&spec("devices=16&stages=4")).unwrap();
        assert!(rules(&clean, &offsets(&clean, Align::Full), Thresholds::default()).is_empty());
    }

    /// Collectives and send/receive pairs end together in true time, so full alignment undoes
    /// the clock skew exactly; stage alignment only within stages.
    #[test]
    fn alignment_undoes_the_clock_skew() {
        let s = spec("devices=12&stages=3&layers=9&skew=500&seed=7");
        let skew: Vec<i64> = simulate(&s).iter().map(|d| d.skew as i64).collect();
        let t = training(&s).unwrap();
        let full = offsets(&t, Align::Full);
        for (d, dev) in t.devices.iter().enumerate() {
            assert_eq!(full[d], skew[0] - skew[dev.rank as usize], "{}", dev.name);
        }
        let stage = offsets(&t, Align::Stage);
        assert_eq!(stage[5] - stage[4], skew[4] - skew[5]);
        assert!(full.iter().zip(&stage).any(|(a, b)| a != b), "stages are shifted against each other");
    }

    #[test]
    fn impossible_options_are_refused() {
        let bad = |q: &str| exaviz_datasets::open(&format!("gen:training?{q}")).unwrap_err().to_string();
        assert!(bad("devices=10&stages=4").contains("not a multiple"));
        assert!(bad("straggler=8").contains("straggler=8 is not below 8"));
        assert!(bad("flavour=tf").contains("expected kineto or jax"));
        assert!(bad("devices=100000&microbatches=4000").contains("above the limit"));
        assert!(bad("colour=red").contains("unknown option"));
    }
}
