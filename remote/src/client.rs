//! A store opened from `exaviz serve`: `grpc://HOST:PORT/STORE`, or `ssh://[USER@]HOST[:PORT]/PATH`
//! (which starts the server on HOST over SSH, talking over the SSH connection itself: nothing
//! listens, nothing is written to either disk).
//!
//! The store opens as it would from a local disk, from its files' bytes held in memory: a
//! store of at most [`store::IN_MEMORY_ROWS`] messages and intervals whole, a larger one out of
//! core: every file but the messages and intervals (the pyramid among them), then the rows of
//! each window a picture reads ([`RemoteRows`]), one round trip per window. The views draw the
//! same pictures as from the local store, from the same code.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_flight::decode::{DecodedPayload, FlightDataDecoder};
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightData, Ticket};
use exaviz_model::dataset::{Cells, CellsAsk, Dataset, OutOfCore, WindowRows};
use exaviz_model::source::SourceError;
use exaviz_model::{Intervals, Messages};
use exaviz_store as store;
use exaviz_store::Files;
use futures::{StreamExt, TryStreamExt};
use tonic::transport::{Channel, Endpoint};

use crate::protocol::{Ask, Assembled, Request, RowsAsk, add_intervals, add_messages, cells_of};

/// Bytes received from servers by this process (Flight messages' headers, bodies and
/// metadata): what a gesture costs on the wire.
static RECEIVED: AtomicU64 = AtomicU64::new(0);

/// Bytes received from servers so far.
pub fn bytes_received() -> u64 {
    RECEIVED.load(Ordering::Relaxed)
}

/// Whether `input` names a store on a server.
pub fn is_remote(input: &str) -> bool {
    input.starts_with("grpc://") || input.starts_with("ssh://")
}

/// Where a store lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// `grpc://HOST:PORT/STORE`.
    Grpc { host: String, store: String },
    /// `ssh://[USER@]HOST[:PORT]/PATH`.
    Ssh { host: String, port: Option<u16>, path: String },
}

impl Address {
    pub fn parse(input: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("{input}: {why}");
        if let Some(rest) = input.strip_prefix("grpc://") {
            let (host, store) = rest.split_once('/').ok_or_else(|| bad("no store after HOST:PORT/"))?;
            let port = host.rsplit_once(':').map(|(_, p)| p).ok_or_else(|| bad("no port (grpc://HOST:PORT/STORE)"))?;
            port.parse::<u16>().map_err(|_| bad("the port is not a number"))?;
            if store.is_empty() {
                return Err(bad("no store after HOST:PORT/"));
            }
            return Ok(Address::Grpc { host: host.to_string(), store: store.to_string() });
        }
        if let Some(rest) = input.strip_prefix("ssh://") {
            let (host, path) = rest.split_once('/').ok_or_else(|| bad("no path after HOST (ssh://HOST/PATH)"))?;
            let (host, port) = match host.rsplit_once(':') {
                Some((h, p)) => (h, Some(p.parse::<u16>().map_err(|_| bad("the port is not a number"))?)),
                None => (host, None),
            };
            if host.is_empty() || host.starts_with('-') || path.is_empty() {
                return Err(bad("no host or no path (ssh://[USER@]HOST[:PORT]/PATH)"));
            }
            return Ok(Address::Ssh { host: host.to_string(), port, path: format!("/{path}") });
        }
        Err(bad("not a grpc:// or ssh:// address"))
    }

    /// The store's name in requests.
    fn store(&self) -> &str {
        match self {
            Address::Grpc { store, .. } => store,
            Address::Ssh { path, .. } => path,
        }
    }
}

/// A word quoted for a POSIX shell (the remote side of `ssh` runs one).
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A connection to a server and the store it reads.
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    client: FlightServiceClient<Channel>,
    store: String,
    /// The address, naming the store in messages.
    label: String,
    /// Over SSH: what the remote side last wrote to its standard error.
    said: Option<crate::transport::Said>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Remote({})", self.label)
    }
}

/// Largest message accepted from a server (the server sends at most 1 MiB pieces).
const MAX_MESSAGE: usize = 64 << 20;

impl Remote {
    /// Connects to the server of `input`.
    pub fn connect(input: &str) -> Result<Self, String> {
        let address = Address::parse(input)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("exaviz-remote")
            .enable_all()
            .build()
            .map_err(|e| format!("{input}: {e}"))?;
        let said = matches!(address, Address::Ssh { .. }).then(crate::transport::Said::default);
        let channel = runtime.block_on(async {
            match &address {
                Address::Grpc { host, .. } => Endpoint::from_shared(format!("http://{host}"))
                    .map_err(|e| e.to_string())?
                    .tcp_nodelay(true)
                    .connect_timeout(std::time::Duration::from_secs(10))
                    .connect()
                    .await
                    .map_err(|e| format!("cannot reach the server ({})", source_of(&e))),
                Address::Ssh { host, port, path } => {
                    let (program, args) = ssh_command(host, *port, path);
                    let said = said.clone().unwrap_or_default();
                    let connector = tower::service_fn(move |_: tonic::transport::Uri| {
                        let (program, args, said) = (program.clone(), args.clone(), said.clone());
                        async move {
                            crate::transport::Child::spawn(&program, &args, said)
                                .map(hyper_util::rt::TokioIo::new)
                                .map_err(|e| std::io::Error::other(format!("{program}: {e}")))
                        }
                    });
                    Endpoint::from_static("http://ssh.exaviz")
                        .connect_with_connector(connector)
                        .await
                        .map_err(|e| format!("cannot start exaviz serve over ssh ({})", source_of(&e)))
                }
            }
        });
        let channel = channel.map_err(|e| format!("{input}: {e}"))?;
        let client = FlightServiceClient::new(channel).max_decoding_message_size(MAX_MESSAGE);
        Ok(Self { runtime, client, store: address.store().to_string(), label: input.to_string(), said })
    }

    /// Over SSH, the reason the remote side gave for stopping, once it has closed its standard
    /// error (waiting a second at most).
    fn remote_reason(&self) -> Option<String> {
        let said = self.said.as_ref()?;
        for _ in 0..100 {
            if said.lock().ok()?.1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let s = said.lock().ok()?.0.clone();
        (!s.is_empty()).then_some(s)
    }

    /// The answer to `ask`, as each schema's batches in order.
    pub fn get(&self, ask: Ask) -> Result<Vec<(arrow_schema::SchemaRef, Vec<arrow_array::RecordBatch>)>, String> {
        let ticket = Ticket { ticket: Request { store: self.store.clone(), ask }.ticket().into() };
        let mut client = self.client.clone();
        let answer = self.runtime.block_on(async move {
            let response = client.do_get(ticket).await.map_err(|s| status_line(&s))?;
            let data = response
                .into_inner()
                .map_err(|s| arrow_flight::error::FlightError::Tonic(Box::new(s)))
                .inspect_ok(|d: &FlightData| {
                    let n = d.data_header.len() + d.data_body.len() + d.app_metadata.len();
                    RECEIVED.fetch_add(n as u64, Ordering::Relaxed);
                });
            let mut decoder = FlightDataDecoder::new(data);
            let mut parts: Vec<(arrow_schema::SchemaRef, Vec<arrow_array::RecordBatch>)> = Vec::new();
            while let Some(d) = decoder.next().await {
                match d.map_err(|e| flight_line(&e))?.payload {
                    DecodedPayload::Schema(s) => parts.push((s, Vec::new())),
                    DecodedPayload::RecordBatch(b) => match parts.last_mut() {
                        Some(p) => p.1.push(b),
                        None => return Err("rows before their schema".to_string()),
                    },
                    DecodedPayload::None => {}
                }
            }
            Ok(parts)
        });
        answer.map_err(|e| match self.remote_reason() {
            Some(why) if e.contains("connection") => format!("the server stopped: {why}"),
            _ => e,
        })
    }

    /// The files of `ask` (the head or the events), held in memory, the span of the store's
    /// rows where the server gives it, and whether the server draws cells.
    fn files(&self, ask: Ask, into: &mut Assembled) -> Result<(Option<(u64, u64)>, bool), String> {
        let (mut span, mut cells) = (None, false);
        for (schema, batches) in self.get(ask)? {
            span = span.or_else(|| crate::protocol::span_of(&schema));
            cells |= crate::protocol::draws_cells(&schema);
            for b in &batches {
                into.add(b)?;
            }
        }
        Ok((span, cells))
    }
}

/// The program and arguments that start `exaviz serve --stdio PATH` on `host`: `ssh` (or
/// `$EXAVIZ_SSH`), running `exaviz` (or `$EXAVIZ_REMOTE`) there.
fn ssh_command(host: &str, port: Option<u16>, path: &str) -> (String, Vec<String>) {
    let program = std::env::var("EXAVIZ_SSH").unwrap_or_else(|_| "ssh".into());
    let remote = std::env::var("EXAVIZ_REMOTE").unwrap_or_else(|_| "exaviz".into());
    let mut args = vec!["-o".to_string(), "BatchMode=yes".into(), "-e".into(), "none".into(), "-T".into()];
    if let Some(p) = port {
        args.extend(["-p".into(), p.to_string()]);
    }
    args.extend([host.to_string(), "--".into(), format!("{} serve --stdio {}", quoted(&remote), quoted(path))]);
    (program, args)
}

/// The innermost cause of a transport error, in one line.
fn source_of(e: &dyn std::error::Error) -> String {
    let mut s: &dyn std::error::Error = e;
    while let Some(inner) = s.source() {
        s = inner;
    }
    s.to_string().lines().next().unwrap_or_default().to_string()
}

fn status_line(s: &tonic::Status) -> String {
    let m = s.message().lines().next().unwrap_or_default();
    match s.code() {
        tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled => {
            format!("the connection to the server was lost ({m})")
        }
        _ => m.to_string(),
    }
}

fn flight_line(e: &arrow_flight::error::FlightError) -> String {
    match e {
        arrow_flight::error::FlightError::Tonic(s) => status_line(s),
        e => format!("a damaged answer ({})", e.to_string().lines().next().unwrap_or_default()),
    }
}

/// Opens the store at `input` (`grpc://` or `ssh://`), reporting `progress(bytes, 0)` as its
/// files arrive.
pub fn open(input: &str, progress: &dyn Fn(u64, u64)) -> Result<Dataset, SourceError> {
    open_with(input, progress, store::IN_MEMORY_ROWS)
}

/// [`open`] with the largest count of messages and intervals read into memory (as
/// [`store::open_with`]).
pub fn open_with(input: &str, progress: &dyn Fn(u64, u64), in_memory_rows: u64) -> Result<Dataset, SourceError> {
    let remote = Arc::new(Remote::connect(input).map_err(|e| SourceError::invalid(input, e))?);
    let fail = |e: String| SourceError::invalid(input, e);
    let mut held = Assembled::default();
    let (span, draws_cells) = remote.files(Ask::Head, &mut held).map_err(fail)?;
    progress(held.bytes, 0);
    let manifest = held.files.get(store::MANIFEST).ok_or_else(|| fail("the server sent no manifest".into()))?;
    let m: store::Manifest =
        serde_json::from_slice(manifest).map_err(|e| fail(format!("the server sent an unreadable manifest ({e})")))?;
    let events = m.rows("messages").saturating_add(m.rows("intervals"));
    let whole = events <= in_memory_rows || m.pyramid.is_none();
    if m.pyramid.is_none() && events > store::MAX_IN_MEMORY_ROWS {
        // Refused before its rows travel, as a local store of that size is.
        return Err(fail(format!(
            "holds {events} messages and intervals and no pyramid, too many to read into memory: run exaviz pyramid on the store where it lies"
        )));
    }
    if whole {
        remote.files(Ask::Events, &mut held).map_err(fail)?;
        progress(held.bytes, 0);
    }
    let files: BTreeMap<String, bytes::Bytes> =
        held.files.into_iter().map(|(k, v)| (k, bytes::Bytes::from(v))).collect();
    let files = Files::Held { at: PathBuf::from(input), files: Arc::new(files) };
    let rows = |m: &store::Manifest, d: &Dataset| -> Result<OutOfCore, SourceError> {
        let rows = RemoteRows {
            remote: remote.clone(),
            locations: d.trace.locations.name.len() as u32,
            regions: d.trace.region_names.len() as u32,
            kept: Mutex::new(None),
            last: Mutex::new(None),
            cells: Mutex::new(None),
            draws_cells,
        };
        store::out_of_core_with(&files, m, Arc::new(rows), span)
    };
    let in_memory = if whole { u64::MAX } else { 0 };
    let mut d = store::open_in(&files, &|_, _| {}, in_memory, &rows)?;
    // The index a local store read into memory gets (summed here: nothing is kept on disk).
    let _ = exaviz_store::sidecar::attach(input, &mut d);
    Ok(d)
}

/// What one window's answer held.
enum Fetched {
    /// The store's statistics bound the window above the budget to this many rows.
    Over(u64),
    Rows(u64, Box<Rows>),
    /// The window's picture as cells, where it held more rows than asked ([`CellsAsk::above`]).
    Cells(u64, Arc<Cells>),
}

/// The rows of a store on a server, by window: [`WindowRows::estimate`] asks for the window's
/// rows within the budget a picture reads ([`exaviz_model::dataset::ROW_BUDGET`]) and
/// keeps them for the [`WindowRows::read`] that follows, so a window costs one round trip.
#[derive(Debug)]
pub struct RemoteRows {
    remote: Arc<Remote>,
    locations: u32,
    regions: u32,
    /// The last window estimated, its estimate, and its rows (within the budget) until they
    /// are read.
    kept: Mutex<Option<Kept>>,
    /// The last window whose rows were fetched, its estimate and its rows: a window beside it
    /// asks only for the time it uncovers (a pan), one inside it for nothing (a zoom in).
    last: Mutex<Option<(Window, u64, Rows)>>,
    /// The last cells fetched and what they were asked for: the picture of the window that
    /// follows its estimate reads them.
    cells: Mutex<Option<(CellsAsk, Arc<Cells>)>>,
    /// Whether the server draws cells (its head says so; an older one refuses to be asked).
    draws_cells: bool,
}

/// A window estimated: the window, its estimate, and its rows where they were within the budget
/// (until they are read).
type Kept = (Window, u64, Option<Box<Rows>>);

/// A window, ticks, both ends in.
type Window = (u64, u64);
/// A window's rows.
type Rows = (Messages, Intervals);

impl RemoteRows {
    fn fetch(&self, window: (u64, u64), budget: u64, cells: Option<&CellsAsk>) -> Result<Fetched, String> {
        let last = self.last.lock().ok().and_then(|l| l.clone()).filter(|l| l.0.0 <= window.1 && window.0 <= l.0.1);
        let parts = match &last {
            Some((w, _, _)) => store::windows_beside(*w, window),
            None => vec![window],
        };
        let (estimate, fetched) = match &last {
            // Inside the last window: its rows hold this one's, within its estimate.
            Some((_, n, _)) if parts.is_empty() => (*n, Vec::new()),
            _ => {
                let ask = RowsAsk {
                    t0: window.0,
                    t1: window.1,
                    budget,
                    parts: if last.is_some() { parts.clone() } else { Vec::new() },
                    cells: cells.cloned(),
                };
                let answer = self.remote.get(Ask::Rows(ask))?;
                let meta = |k: &str| answer.first().and_then(|(s, _)| s.metadata().get(k).cloned());
                let estimate =
                    meta("estimate").and_then(|e| e.parse::<u64>().ok()).ok_or("an answer without its estimate")?;
                if meta("over").is_some() {
                    return Ok(Fetched::Over(estimate));
                }
                if meta("cells").is_some() {
                    return Ok(Fetched::Cells(estimate, Arc::new(cells_of(&answer, self.locations)?)));
                }
                if answer.len() != 2 * parts.len() {
                    return Err(format!("an answer of {} tables for {} windows", answer.len(), parts.len()));
                }
                let mut fetched = Vec::new();
                for pair in answer.chunks(2) {
                    let (mut m, mut v) = (Messages::default(), Intervals::default());
                    for b in &pair[0].1 {
                        add_messages(&mut m, b)?;
                    }
                    for b in &pair[1].1 {
                        add_intervals(&mut v, b)?;
                    }
                    self.check(&m, &v)?;
                    fetched.push((m, v));
                }
                (estimate, fetched)
            }
        };
        let rows = match last {
            Some((w, _, rows)) => {
                let read = |part: (u64, u64)| {
                    let k = parts.iter().position(|&p| p == part);
                    k.and_then(|k| fetched.get(k).cloned()).ok_or_else(|| {
                        SourceError::invalid(&self.remote.label, "a window the server was not asked for")
                    })
                };
                store::rows_beside(rows, w, window, &read).map_err(|e| e.to_string())?
            }
            None => fetched.into_iter().next().ok_or("an answer without rows")?,
        };
        if let Ok(mut l) = self.last.lock() {
            *l = Some((window, estimate, rows.clone()));
        }
        Ok(Fetched::Rows(estimate, Box::new(rows)))
    }

    /// Keeps `window`'s estimate `n` and its rows (where fetched) for the read that follows.
    fn keep(&self, window: Window, n: u64, rows: Option<Box<Rows>>) {
        if let Ok(mut k) = self.kept.lock() {
            *k = Some((window, n, rows));
        }
    }

    /// Every id in range, as a store's reader checks them.
    fn check(&self, m: &Messages, v: &Intervals) -> Result<(), String> {
        let (n, r) = (self.locations, self.regions);
        if m.source.iter().chain(&m.destination).chain(&v.location).any(|&l| l >= n) {
            return Err(format!("a row names a location out of range (there are {n})"));
        }
        if v.kind.iter().any(|&k| k >= r) {
            return Err(format!("an interval names a region out of range (there are {r})"));
        }
        if v.start.iter().zip(&v.end).any(|(s, e)| e < s) {
            return Err("an interval ends before it starts".into());
        }
        Ok(())
    }
}

impl WindowRows for RemoteRows {
    fn remote(&self) -> bool {
        true
    }

    fn estimate(&self, window: (u64, u64)) -> u64 {
        if let Some(n) = self.kept.lock().ok().and_then(|k| k.as_ref().filter(|k| k.0 == window).map(|k| k.1)) {
            return n;
        }
        let (n, rows) = match self.fetch(window, exaviz_model::dataset::ROW_BUDGET, None) {
            Ok(Fetched::Over(n) | Fetched::Cells(n, _)) => (n, None),
            Ok(Fetched::Rows(n, rows)) => (n, Some(rows)),
            // The read that follows says what went wrong.
            Err(_) => return 0,
        };
        self.keep(window, n, rows);
        n
    }

    fn read(&self, window: (u64, u64)) -> Result<(Messages, Intervals), String> {
        let kept = self.kept.lock().ok().and_then(|mut k| match k.as_mut() {
            Some((w, _, rows)) if *w == window => rows.take(),
            _ => None,
        });
        if let Some(rows) = kept {
            return Ok(*rows);
        }
        match self.fetch(window, u64::MAX, None)? {
            Fetched::Rows(_, rows) => Ok(*rows),
            Fetched::Over(n) | Fetched::Cells(n, _) => Err(format!("the server refused a window of {n} rows")),
        }
    }

    fn cells(&self, ask: &CellsAsk) -> Option<Result<Arc<Cells>, String>> {
        if !self.draws_cells {
            return None;
        }
        if let Some(c) = self.cells.lock().ok().and_then(|c| c.as_ref().filter(|c| c.0 == *ask).map(|c| c.1.clone())) {
            return Some(Ok(c));
        }
        // The window estimated already: its rows are kept, or it is over the budget.
        let known = self.kept.lock().ok().is_some_and(|k| {
            k.as_ref().is_some_and(|k| k.0 == ask.window && (k.2.is_some() || k.1 > exaviz_model::dataset::ROW_BUDGET))
        });
        if known {
            return None;
        }
        let (n, rows) = match self.fetch(ask.window, exaviz_model::dataset::ROW_BUDGET, Some(ask)) {
            Ok(Fetched::Cells(n, c)) => {
                if let Ok(mut k) = self.cells.lock() {
                    *k = Some((ask.clone(), c.clone()));
                }
                self.keep(ask.window, n, None);
                return Some(Ok(c));
            }
            Ok(Fetched::Over(n)) => (n, None),
            Ok(Fetched::Rows(n, rows)) => (n, Some(rows)),
            Err(e) => return Some(Err(e)),
        };
        self.keep(ask.window, n, rows);
        None
    }
}
