//! `exaviz serve`: the stores of some folders answered over Arrow Flight, read-only.
//!
//! Each `DoGet` is one request ([`crate::protocol`]): a store's files, or the rows of a time
//! window read from the store as `exaviz view` reads them locally (the row groups and pages
//! that overlap it), refused where the store's statistics bound them above the request's budget.
//! Stores opened for rows are kept in a small least-recently-used cache. A path outside the
//! served folders, a file that is not a store's, or a malformed request gets one line as the
//! error status; the server writes nothing.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest, HandshakeResponse,
    PollInfo, PutResult, SchemaResult, Ticket,
};
use exaviz_model::dataset::Dataset;
use exaviz_store as store;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use tonic::{Request as Rpc, Response, Status, Streaming};

use crate::protocol::{
    Ask, BATCH_ROWS, CHUNK_BYTES, Request, RowTable, RowsAsk, answer_schema, file_piece, intervals_batch,
    messages_batch, plain_name,
};

/// Stores kept open for rows at once.
const OPEN_STORES: usize = 8;

/// What a server serves and how.
pub struct Served {
    /// The folders (or stores) served, canonical.
    roots: Vec<PathBuf>,
    /// Stores opened out of core for rows, most recently used last.
    open: Mutex<Vec<(PathBuf, Arc<Dataset>)>>,
    /// A delay before each answer: a simulated round trip, for benchmarks.
    delay: Duration,
    /// Whether each request gets a line on standard error.
    pub log: bool,
}

impl Served {
    /// A server of `roots` (stores, or folders holding stores at any depth).
    pub fn new(roots: &[PathBuf], delay: Duration) -> Result<Self, String> {
        if roots.is_empty() {
            return Err("nothing to serve: name a store or a folder of stores".into());
        }
        let roots = roots
            .iter()
            .map(|r| r.canonicalize().map_err(|e| format!("{}: {e}", r.display())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { roots, open: Mutex::new(Vec::new()), delay, log: false })
    }

    /// The store a request names: below a served folder (or a served store itself, by its
    /// path or its name), holding a manifest.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, String> {
        let asked = Path::new(name);
        let mut candidates = Vec::new();
        if asked.is_absolute() {
            candidates.push(asked.to_path_buf());
        } else {
            for r in &self.roots {
                candidates.push(r.join(asked));
                if r.file_name().is_some_and(|f| f == asked.as_os_str()) {
                    candidates.push(r.clone());
                }
            }
        }
        let outside = || format!("{name}: not below a folder this server serves");
        for c in candidates {
            let Ok(c) = c.canonicalize() else { continue };
            if !self.roots.iter().any(|r| c.starts_with(r)) {
                return Err(outside());
            }
            if c.join(store::MANIFEST).is_file() {
                return Ok(c);
            }
        }
        Err(if asked.is_absolute() || name.contains("..") { outside() } else { format!("{name}: no such store here") })
    }

    /// The stores served, each by the name a request gives it (its path below its served
    /// folder, or a served store's own folder name), in order; a name found twice is the
    /// first's, as [`Served::resolve`] finds it. Folders are searched to a depth of
    /// [`MAX_DEPTH`], symbolic links not followed, for at most [`MAX_STORES`] stores.
    pub fn stores(&self) -> Vec<(String, PathBuf)> {
        let mut out: Vec<(String, PathBuf)> = Vec::new();
        for r in &self.roots {
            if store::is_store(r) {
                let name = r.file_name().map_or_else(|| r.display().to_string(), |n| n.to_string_lossy().into_owned());
                out.push((name, r.clone()));
            } else {
                find_stores(r, r, 0, &mut out);
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|(n, _)| seen.insert(n.clone()));
        out
    }

    /// The store at `path` opened out of core (kept for the next request).
    fn opened(&self, path: &Path) -> Result<Arc<Dataset>, String> {
        {
            let mut open = self.open.lock().map_err(|_| "the server's cache is poisoned")?;
            if let Some(i) = open.iter().position(|(p, _)| p == path) {
                let kept = open.remove(i);
                let d = kept.1.clone();
                open.push(kept);
                return Ok(d);
            }
        }
        let d = store::open_with(path, &|_, _| {}, 0).map_err(|e| e.to_string())?;
        if d.out_of_core.is_none() {
            return Err(format!(
                "{}: has no pyramid to read windows by (exaviz pyramid STORE adds one)",
                path.display()
            ));
        }
        let d = Arc::new(d);
        let mut open = self.open.lock().map_err(|_| "the server's cache is poisoned")?;
        open.push((path.to_path_buf(), d.clone()));
        if open.len() > OPEN_STORES {
            open.remove(0);
        }
        Ok(d)
    }

    /// The answer to `r`: parts of record batches, each part of one schema.
    pub fn answer(&self, r: &Request) -> Result<Vec<Part>, String> {
        let path = self.resolve(&r.store)?;
        Ok(match r.ask {
            Ask::Head => {
                let (_, pieces) = files(&path, |n| !is_event_file(n))?;
                // The span of a store read out of core, as its rows' statistics give it.
                let pyramid = store::manifest(&path).is_ok_and(|m| m.pyramid.is_some());
                let span = if pyramid { self.opened(&path)?.out_of_core.as_ref().map(|o| o.span) } else { None };
                let schema = crate::protocol::head_schema(span);
                let pieces = pieces.into_iter().map(|b| b.with_schema(schema.clone())).collect::<Result<_, _>>();
                vec![(schema, pieces.map_err(|e| e.to_string())?)]
            }
            Ask::Events => vec![files(&path, is_event_file)?],
            Ask::Rows(ref a) => self.rows(&path, a)?,
        })
    }

    fn rows(&self, path: &Path, a: &RowsAsk) -> Result<Vec<Part>, String> {
        let d = self.opened(path)?;
        let ooc = d.out_of_core.as_ref().ok_or("not out of core")?;
        let window = (a.t0, a.t1);
        let estimate = ooc.rows.estimate(window);
        if estimate > a.budget {
            let schema = answer_schema(RowTable::Messages, estimate, true);
            return Ok(vec![(schema, Vec::new())]);
        }
        // A window denser than the picture asked for: its cells, drawn from all its rows here
        // (its rows where it holds fewer after all).
        if let Some(c) = a.cells.as_ref().filter(|c| estimate > c.above) {
            if c.window != window {
                return Err(format!("cells of window {:?} asked with the rows of {window:?}", c.window));
            }
            let rows = || d.window_rows(window).map_err(|e| format!("{}: {e}", path.display()));
            if let Some(cells) = exaviz_views::timeline::window_cells(&d, c, rows).map_err(|e| e.to_string())? {
                return crate::protocol::cells_parts(&cells, estimate);
            }
        }
        let pieces = |n: usize, batch: &dyn Fn(std::ops::Range<usize>) -> Result<RecordBatch, String>| {
            (0..n).step_by(BATCH_ROWS).map(|s| batch(s..(s + BATCH_ROWS).min(n))).collect::<Result<Vec<_>, _>>()
        };
        let ms = answer_schema(RowTable::Messages, estimate, false);
        let vs = answer_schema(RowTable::Intervals, estimate, false);
        let mut out = Vec::new();
        for part in a.windows() {
            let (m, v) = ooc.rows.read(part).map_err(|e| format!("{}: {e}", path.display()))?;
            let mb = pieces(m.send_time.len(), &|r| messages_batch(&m, r, ms.clone()))?;
            let vb = pieces(v.start.len(), &|r| intervals_batch(&v, r, vs.clone()))?;
            out.extend([(ms.clone(), mb), (vs.clone(), vb)]);
        }
        Ok(out)
    }
}

/// Deepest folder below a served folder searched for stores.
pub const MAX_DEPTH: usize = 8;
/// Most stores one server lists.
pub const MAX_STORES: usize = 4096;

/// The stores below `dir` (at `depth` below `root`), named by their paths below `root`.
fn find_stores(root: &Path, dir: &Path, depth: usize, out: &mut Vec<(String, PathBuf)>) {
    if depth > MAX_DEPTH || out.len() >= MAX_STORES {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for d in dirs {
        if out.len() >= MAX_STORES {
            return;
        }
        if store::is_store(&d) {
            if let Some(name) = d.strip_prefix(root).ok().and_then(|p| p.to_str()) {
                out.push((name.to_string(), d.clone()));
            }
        } else {
            find_stores(root, &d, depth + 1, out);
        }
    }
}

/// Batches of one schema.
pub type Part = (arrow_schema::SchemaRef, Vec<RecordBatch>);

/// Whether a store's file holds its messages or intervals.
fn is_event_file(name: &str) -> bool {
    name == "messages.parquet" || name == "intervals.parquet"
}

/// The plain files of store `path` that `keep` keeps, in pieces.
fn files(path: &Path, keep: impl Fn(&str) -> bool) -> Result<Part, String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| plain_name(n) && keep(n) && (n.ends_with(".parquet") || n.ends_with(".json")))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for n in names {
        let bytes = std::fs::read(path.join(&n)).map_err(|e| format!("{}: {e}", path.join(&n).display()))?;
        if bytes.is_empty() {
            out.push(file_piece(&n, 0, &[])?);
        }
        for (k, piece) in bytes.chunks(CHUNK_BYTES).enumerate() {
            out.push(file_piece(&n, (k * CHUNK_BYTES) as u64, piece)?);
        }
    }
    Ok((crate::protocol::files_schema(), out))
}

/// The Flight service of a [`Served`]: exaviz's own requests (JSON tickets, [`crate::protocol`]),
/// and the standard calls and Flight SQL ([`crate::sql`]).
#[derive(Clone)]
pub struct Service {
    served: Arc<Served>,
    #[cfg(feature = "sql")]
    sql: crate::sql::SqlService,
}

impl Service {
    pub fn new(served: Arc<Served>) -> Self {
        Self {
            #[cfg(feature = "sql")]
            sql: {
                let s = served.clone();
                crate::sql::SqlService::new(Box::new(move || s.stores()), served.log)
            },
            served,
        }
    }
}

/// What an exaviz built without SQL answers to a standard call.
#[cfg(not(feature = "sql"))]
fn without_sql<T>(what: &str) -> Result<T, Status> {
    Err(Status::unimplemented(format!(
        "{what}: this exaviz serve was built without SQL (its `query` feature): it answers exaviz's own requests only"
    )))
}

type Stream<T> = BoxStream<'static, Result<T, Status>>;

fn unsupported<T>(what: &str) -> Result<T, Status> {
    Err(Status::unimplemented(format!("exaviz serve is read-only and answers no {what}")))
}

#[tonic::async_trait]
#[cfg_attr(not(feature = "sql"), allow(unused_variables))]
impl FlightService for Service {
    type HandshakeStream = Stream<HandshakeResponse>;
    type ListFlightsStream = Stream<FlightInfo>;
    type DoGetStream = Stream<FlightData>;
    type DoPutStream = Stream<PutResult>;
    type DoExchangeStream = Stream<FlightData>;
    type DoActionStream = Stream<arrow_flight::Result>;
    type ListActionsStream = Stream<ActionType>;

    async fn do_get(&self, request: Rpc<Ticket>) -> Result<Response<Self::DoGetStream>, Status> {
        // exaviz's own requests are JSON objects; any other ticket is the standard calls'.
        if request.get_ref().ticket.first() != Some(&b'{') {
            #[cfg(feature = "sql")]
            return self.sql.get(request).await;
            #[cfg(not(feature = "sql"))]
            return without_sql("a ticket that is not exaviz's own request");
        }
        let r = Request::decode(&request.into_inner().ticket).map_err(Status::invalid_argument)?;
        let served = self.served.clone();
        if !served.delay.is_zero() {
            tokio::time::sleep(served.delay).await;
        }
        let started = std::time::Instant::now();
        let log = served.log.then(|| format!("{} {:?}", r.store, r.ask));
        let parts = tokio::task::spawn_blocking(move || served.answer(&r))
            .await
            .map_err(|e| Status::internal(format!("the answer failed ({e})")))?;
        if let Some(line) = log {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            match &parts {
                Ok(p) => {
                    let rows: usize = p.iter().flat_map(|(_, b)| b).map(RecordBatch::num_rows).sum();
                    let mb = p.iter().flat_map(|(_, b)| b).map(RecordBatch::get_array_memory_size).sum::<usize>()
                        as f64
                        / 1e6;
                    // A window's cells: the picture's size and the trace rows drawn.
                    let meta = p.first().map(|(s, _)| s.metadata());
                    let what = match meta.and_then(|m| Some((m.get("cells")?, m.get("rows")?))) {
                        Some((size, drawn)) => format!("cells {size} of {drawn} rows"),
                        None => format!("{rows} rows"),
                    };
                    eprintln!("{line}: {what}, {mb:.2} MB before compression, in {ms:.1} ms");
                }
                Err(e) => eprintln!("{line}: refused: {e}"),
            }
        }
        let parts = parts.map_err(Status::failed_precondition)?;
        let options = arrow_ipc::writer::IpcWriteOptions::default()
            .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
            .map_err(|e| Status::internal(e.to_string()))?;
        // Each part after a schema message of its own, one stream.
        let streams = parts.into_iter().map(move |(schema, batches)| {
            FlightDataEncoderBuilder::new()
                .with_options(options.clone())
                .with_max_flight_data_size(CHUNK_BYTES)
                .with_schema(schema)
                .build(futures::stream::iter(batches.into_iter().map(Ok)))
                .map_err(|e| Status::internal(e.to_string()))
        });
        Ok(Response::new(futures::stream::iter(streams).flatten().boxed()))
    }

    async fn handshake(
        &self,
        request: Rpc<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        #[cfg(feature = "sql")]
        return FlightService::handshake(&self.sql, request).await;
        #[cfg(not(feature = "sql"))]
        without_sql("Handshake")
    }
    async fn list_flights(&self, request: Rpc<Criteria>) -> Result<Response<Self::ListFlightsStream>, Status> {
        #[cfg(feature = "sql")]
        {
            let prefix = String::from_utf8_lossy(&request.get_ref().expression).into_owned();
            let infos = self.sql.list(prefix).await?;
            return Ok(Response::new(futures::stream::iter(infos.into_iter().map(Ok)).boxed()));
        }
        #[cfg(not(feature = "sql"))]
        without_sql("ListFlights")
    }
    async fn get_flight_info(&self, request: Rpc<FlightDescriptor>) -> Result<Response<FlightInfo>, Status> {
        #[cfg(feature = "sql")]
        return Ok(Response::new(self.sql.flight_info(request).await?));
        #[cfg(not(feature = "sql"))]
        without_sql("GetFlightInfo")
    }
    async fn poll_flight_info(&self, _: Rpc<FlightDescriptor>) -> Result<Response<PollInfo>, Status> {
        Err(Status::unimplemented("exaviz serve answers GetFlightInfo, not PollFlightInfo"))
    }
    async fn get_schema(&self, request: Rpc<FlightDescriptor>) -> Result<Response<SchemaResult>, Status> {
        #[cfg(feature = "sql")]
        return Ok(Response::new(self.sql.schema(request).await?));
        #[cfg(not(feature = "sql"))]
        without_sql("GetSchema")
    }
    async fn do_put(&self, _: Rpc<Streaming<FlightData>>) -> Result<Response<Self::DoPutStream>, Status> {
        unsupported("DoPut (updates, ingestion or parameters)")
    }
    async fn do_exchange(&self, _: Rpc<Streaming<FlightData>>) -> Result<Response<Self::DoExchangeStream>, Status> {
        unsupported("DoExchange")
    }
    async fn do_action(&self, request: Rpc<Action>) -> Result<Response<Self::DoActionStream>, Status> {
        #[cfg(feature = "sql")]
        return FlightService::do_action(&self.sql, request).await;
        #[cfg(not(feature = "sql"))]
        without_sql("DoAction")
    }
    async fn list_actions(&self, request: Rpc<Empty>) -> Result<Response<Self::ListActionsStream>, Status> {
        #[cfg(feature = "sql")]
        return FlightService::list_actions(&self.sql, request).await;
        #[cfg(not(feature = "sql"))]
        without_sql("ListActions")
    }
}

/// The gRPC service of `served`, with the request size bounded.
pub fn service(served: Arc<Served>) -> FlightServiceServer<Service> {
    FlightServiceServer::new(Service::new(served)).max_decoding_message_size(64 << 10)
}

/// Serves `served` on `listener` until the process ends.
pub async fn serve_tcp(served: Arc<Served>, listener: tokio::net::TcpListener) -> Result<(), String> {
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(service(served))
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| format!("the server stopped ({e})"))
}

/// A server running on a thread of its own (for tests and benchmarks in one process): it
/// stops, its connections dropped, when this is dropped.
pub struct Running {
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// `grpc://ADDR/STORE`.
    pub fn url(&self, store: &str) -> String {
        format!("grpc://{}/{store}", self.addr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a server of `served` on a free loopback port, on a thread of its own.
pub fn spawn(served: Served) -> Result<Running, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = Arc::new(served);
    let thread = std::thread::spawn(move || {
        runtime.block_on(async move {
            tokio::select! {
                _ = serve_tcp(served, listener) => {}
                _ = stopped => {}
            }
        });
        // Dropping the runtime ends every connection's task: clients see the connection lost.
        runtime.shutdown_background();
    });
    Ok(Running { addr, stop: Some(stop), thread: Some(thread) })
}

/// Serves `served` to one client over standard input and output (the other end of an `ssh`
/// command), until it closes them.
pub async fn serve_stdio(served: Arc<Served>) -> Result<(), String> {
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    let conn = crate::transport::Stdio::new(closed_tx);
    let incoming =
        futures::stream::once(async move { Ok::<_, std::io::Error>(conn) }).chain(futures::stream::pending());
    tonic::transport::Server::builder()
        .add_service(service(served))
        .serve_with_incoming_shutdown(incoming, async {
            let _ = closed_rx.await;
        })
        .await
        .map_err(|e| format!("the server stopped ({e})"))
}
