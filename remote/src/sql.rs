//! The standard Flight calls and Flight SQL over the served stores, answered by `exaviz query`'s
//! session: any Flight client (pyarrow.flight, ADBC's Flight SQL driver, a JDBC driver) finds the
//! stores and reads their tables as plain Arrow rows.
//!
//! Each served store is a run named by the name exaviz's own requests give it (its path below
//! the served folder) and a schema of that name in catalog [`CATALOG`]; the default schema
//! [`SCHEMA`] holds each table over every store with a `run` column, so that plain table names
//! mean the store where one is served.
//!
//! - ListFlights: each store's tables ([`TABLES`]), descriptor path `[STORE, TABLE]`, with their
//!   columns; the criteria's expression, where given, is a prefix of the stores' names.
//! - GetFlightInfo and GetSchema: a path (`[STORE, TABLE]`, or `[TABLE]` over every store), a
//!   Flight SQL command, or SQL as the command's text.
//! - DoGet: a ticket of the answers above, or SQL text. A statement's ticket holds its SQL, so
//!   the server keeps nothing between calls.
//! - Flight SQL: statements, prepared statements (without parameters), catalogs, schemas,
//!   tables, table types and SqlInfo. Read-only: no updates, ingestion or transactions.
//!
//! Answers are computed as they are sent, batch by batch, uncompressed (every client reads them).

use std::pin::Pin;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_descriptor::DescriptorType;
use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::FlightSqlService;
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult,
    Any, CommandGetCatalogs, CommandGetDbSchemas, CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables,
    CommandPreparedStatementQuery, CommandStatementQuery, ProstMessageExt, SqlInfo, SqlSupportedTransaction,
    TicketStatementQuery,
};
use arrow_flight::{
    Action, FlightData, FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage,
    SchemaAsIpc, SchemaResult, Ticket,
};
use arrow_schema::Schema;
use exaviz_query::{ANALYSES, CATALOG, Run, SCHEMA, Session, Source, TABLES, ident};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt, TryStreamExt};
use prost::Message;
use tonic::{Request, Response, Status, Streaming};

/// The Flight SQL messages' type URLs begin so.
const FLIGHT_SQL_TYPE: &str = "type.googleapis.com/arrow.flight.protocol.sql.";

/// The stores a server serves now, each by its name in requests.
pub type Stores = dyn Fn() -> Vec<(String, std::path::PathBuf)> + Send + Sync;

type Answers<T> = BoxStream<'static, Result<T, Status>>;

/// The SQL side of a server: its session over the stores served now.
pub struct Sql {
    /// The stores served now, by name (what `exaviz serve`'s folders hold).
    stores: Box<Stores>,
    /// Whether each statement gets a line on standard error.
    log: bool,
    /// The session and the stores' names it was made for (made again when they change).
    session: Mutex<Option<(Vec<String>, Arc<Session>)>>,
    info: SqlInfoData,
}

/// The Flight SQL service of a server (the standard calls answered by [`SqlService::list`],
/// [`SqlService::flight_info`], [`SqlService::schema`] and [`SqlService::get`]).
#[derive(Clone)]
pub struct SqlService(Arc<Sql>);

/// Runs `f` on a thread that may block, its error as an invalid request's status.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("the answer failed ({e})")))?
        .map_err(Status::invalid_argument)
}

/// The ticket that runs `sql`.
fn statement_ticket(sql: &str) -> Ticket {
    let t = TicketStatementQuery { statement_handle: sql.to_string().into() };
    Ticket::new(t.as_any().encode_to_vec())
}

/// The FlightInfo of an answer of `schema` that `ticket` fetches.
fn info(schema: &Schema, ticket: Ticket, descriptor: FlightDescriptor) -> Result<FlightInfo, String> {
    Ok(FlightInfo::new()
        .try_with_schema(schema)
        .map_err(|e| e.to_string())?
        .with_endpoint(FlightEndpoint::new().with_ticket(ticket))
        .with_descriptor(descriptor))
}

/// `bytes` as a Flight SQL message, where they are one.
fn flight_sql(bytes: &[u8]) -> Option<Any> {
    Any::decode(bytes).ok().filter(|a| a.type_url.starts_with(FLIGHT_SQL_TYPE))
}

/// `bytes` as SQL text.
fn sql_text(bytes: &[u8], what: &str) -> Result<String, Status> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Status::invalid_argument(format!("{what}: neither a Flight SQL message nor SQL text")))?;
    if text.trim().is_empty() {
        return Err(Status::invalid_argument(format!("{what}: empty")));
    }
    Ok(text.to_string())
}

/// `SELECT *` of `table` in `schema`.
fn table_sql(schema: &str, table: &str) -> String {
    format!("SELECT * FROM {}.{}", ident(schema), ident(table))
}

/// Batches as Flight data, after their schema.
fn flight_data(
    schema: arrow_schema::SchemaRef,
    batches: impl Stream<Item = Result<RecordBatch, FlightError>> + Send + 'static,
) -> Answers<FlightData> {
    FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(batches)
        .map_err(|e| Status::internal(e.to_string().split_whitespace().collect::<Vec<_>>().join(" ")))
        .boxed()
}

/// One record batch as Flight data.
fn one_batch(batch: Result<RecordBatch, FlightError>) -> Result<Response<Answers<FlightData>>, Status> {
    let batch = batch.map_err(|e| Status::internal(e.to_string()))?;
    Ok(Response::new(flight_data(batch.schema(), futures::stream::iter([Ok(batch)]))))
}

impl Sql {
    /// The session over the stores served now: made on the first call and again when the
    /// stores change. Blocks.
    fn session(&self) -> Result<Arc<Session>, String> {
        let stores = (self.stores)();
        if stores.is_empty() {
            return Err("no store is served here".into());
        }
        let names: Vec<String> = stores.iter().map(|(n, _)| n.clone()).collect();
        let mut kept = self.session.lock().map_err(|_| "the server's SQL session failed earlier")?;
        if let Some((n, s)) = kept.as_ref()
            && *n == names
        {
            return Ok(s.clone());
        }
        let runs =
            stores.into_iter().map(|(name, path)| Run { input: name.clone(), name, source: Source::Store(path) });
        let s = Arc::new(Session::new(runs.collect()).map_err(|e| e.to_string())?);
        // The old session (its threads) ends here, on this blocking thread.
        let old = kept.replace((names, s.clone()));
        drop(kept);
        drop(old);
        Ok(s)
    }

    /// Store `name`, or a line naming those there are.
    fn check_store(s: &Session, name: &str) -> Result<(), String> {
        if s.runs().contains(&name) {
            return Ok(());
        }
        let mut runs = s.runs().join(", ");
        if runs.len() > 400 {
            runs = format!("{}…", runs.chars().take(400).collect::<String>());
        }
        Err(format!("{name}: no such store here (the stores: {runs})"))
    }
}

impl SqlService {
    /// The service of the stores `stores` gives, a line per statement on standard error where
    /// `log`.
    pub fn new(stores: Box<Stores>, log: bool) -> Self {
        let mut b = SqlInfoDataBuilder::new();
        b.append(SqlInfo::FlightSqlServerName, "exaviz");
        b.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
        // The Arrow columnar format's version (Schema.fbs).
        b.append(SqlInfo::FlightSqlServerArrowVersion, "1.3");
        b.append(SqlInfo::FlightSqlServerReadOnly, true);
        b.append(SqlInfo::FlightSqlServerSql, true);
        b.append(SqlInfo::FlightSqlServerSubstrait, false);
        b.append(SqlInfo::FlightSqlServerTransaction, SqlSupportedTransaction::None as i32);
        b.append(SqlInfo::FlightSqlServerCancel, false);
        b.append(SqlInfo::SqlDdlCatalog, false);
        b.append(SqlInfo::SqlDdlSchema, false);
        b.append(SqlInfo::SqlDdlTable, false);
        b.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
        // Every value appended is of a type SqlInfo takes: this cannot fail.
        let info = b.build().expect("SqlInfo values of their types");
        Self(Arc::new(Sql { stores, log, session: Mutex::new(None), info }))
    }

    async fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Session) -> Result<T, String> + Send + 'static,
    ) -> Result<T, Status> {
        let sql = self.0.clone();
        blocking(move || f(&*sql.session()?)).await
    }

    /// The FlightInfo of the answer to `sql`: its columns from its plan, and a ticket that runs it.
    async fn statement_info(&self, sql: String, descriptor: FlightDescriptor) -> Result<FlightInfo, Status> {
        self.with_session(move |s| {
            let schema = s.answer_schema(&sql).map_err(|e| e.to_string())?;
            info(&schema, statement_ticket(&sql), descriptor)
        })
        .await
    }

    /// The answer to `sql`, computed as it is sent.
    async fn answer(&self, sql: String) -> Result<Response<Answers<FlightData>>, Status> {
        if self.0.log {
            eprintln!("sql: {}", sql.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        let batches = self.with_session(move |s| s.stream(&sql).map_err(|e| e.to_string())).await?;
        let schema = batches.schema();
        Ok(Response::new(flight_data(schema, batches.map_err(|e| FlightError::ExternalError(Box::new(e))))))
    }

    /// The SQL a descriptor's path names: `[STORE, TABLE]`, or `[TABLE]` over every store.
    async fn path_sql(&self, path: Vec<String>) -> Result<String, Status> {
        let (schema, table) = match path.as_slice() {
            [t] => (SCHEMA.to_string(), t.clone()),
            [s, t] => (s.clone(), t.clone()),
            _ => return Err(Status::invalid_argument("a path names a table: [STORE, TABLE] or [TABLE]")),
        };
        if !TABLES.contains(&table.as_str()) && !ANALYSES.contains(&table.as_str()) {
            return Err(Status::not_found(format!(
                "no table '{table}': the tables are {}, and {}",
                TABLES.join(", "),
                ANALYSES.join(", ")
            )));
        }
        if schema != SCHEMA {
            let store = schema.clone();
            self.with_session(move |s| Sql::check_store(s, &store)).await?;
        }
        Ok(table_sql(&schema, &table))
    }

    /// ListFlights: each store's tables, where the store's name begins with `prefix`.
    pub async fn list(&self, prefix: String) -> Result<Vec<FlightInfo>, Status> {
        self.with_session(move |s| {
            let mut out = Vec::new();
            for run in s.runs().into_iter().filter(|r| r.starts_with(&prefix) && *r != SCHEMA) {
                for table in TABLES {
                    let schema = s.table_schema(run, table).map_err(|e| e.to_string())?;
                    let descriptor = FlightDescriptor::new_path(vec![run.to_string(), table.to_string()]);
                    out.push(info(&schema, statement_ticket(&table_sql(run, table)), descriptor)?);
                }
            }
            Ok(out)
        })
        .await
    }

    /// GetFlightInfo of a path, a Flight SQL command or SQL text.
    pub async fn flight_info(&self, request: Request<FlightDescriptor>) -> Result<FlightInfo, Status> {
        let d = request.get_ref().clone();
        match d.r#type() {
            DescriptorType::Path => {
                let sql = self.path_sql(d.path.clone()).await?;
                self.statement_info(sql, d).await
            }
            DescriptorType::Cmd if flight_sql(&d.cmd).is_some() => {
                Ok(FlightService::get_flight_info(self, request).await?.into_inner())
            }
            DescriptorType::Cmd => self.statement_info(sql_text(&d.cmd, "the command")?, d).await,
            DescriptorType::Unknown => Err(Status::invalid_argument("a descriptor names a path or a command")),
        }
    }

    /// GetSchema: the columns of what GetFlightInfo describes.
    pub async fn schema(&self, request: Request<FlightDescriptor>) -> Result<SchemaResult, Status> {
        Ok(SchemaResult { schema: self.flight_info(request).await?.schema })
    }

    /// DoGet of a ticket of this module's answers, or of SQL text.
    pub async fn get(&self, request: Request<Ticket>) -> Result<Response<Answers<FlightData>>, Status> {
        if flight_sql(&request.get_ref().ticket).is_some() {
            return FlightService::do_get(self, request).await;
        }
        let sql = sql_text(&request.get_ref().ticket, "the ticket")?;
        self.answer(sql).await
    }

    /// Each (schema, table) a client may name, with the table's columns where `columns`.
    fn tables(s: &Session, columns: bool) -> Result<Vec<(String, &'static str, Schema)>, String> {
        let mut schemas = vec![SCHEMA];
        schemas.extend(s.runs().into_iter().filter(|r| *r != SCHEMA && !r.is_empty()));
        let mut out = Vec::new();
        for schema in schemas {
            for table in TABLES.iter().chain(&ANALYSES) {
                let columns = if columns {
                    s.table_schema(schema, table).map_err(|e| e.to_string())?.as_ref().clone()
                } else {
                    Schema::empty()
                };
                out.push((schema.to_string(), *table, columns));
            }
        }
        Ok(out)
    }
}

/// The FlightInfo of a metadata command: `schema`'s rows, fetched by a ticket holding the command.
fn command_info(
    schema: &Schema,
    command: Any,
    request: Request<FlightDescriptor>,
) -> Result<Response<FlightInfo>, Status> {
    let ticket = Ticket::new(command.encode_to_vec());
    Ok(Response::new(info(schema, ticket, request.into_inner()).map_err(Status::internal)?))
}

fn handle_text(handle: &[u8]) -> Result<String, Status> {
    sql_text(handle, "the prepared statement's handle")
}

#[tonic::async_trait]
impl FlightSqlService for SqlService {
    type FlightService = SqlService;

    async fn do_handshake(
        &self,
        _: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>, Status> {
        // No authentication: every client is answered alike.
        let hello = HandshakeResponse { protocol_version: 0, payload: Default::default() };
        Ok(Response::new(futures::stream::iter([Ok(hello)]).boxed()))
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Ok(Response::new(self.statement_info(query.query, request.into_inner()).await?))
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let sql = handle_text(&query.prepared_statement_handle)?;
        Ok(Response::new(self.statement_info(sql, request.into_inner()).await?))
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        command_info(&query.into_builder().schema(), query.as_any(), request)
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        command_info(&query.clone().into_builder().schema(), query.as_any(), request)
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        command_info(&query.clone().into_builder().schema(), query.as_any(), request)
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        command_info(&query.into_builder().schema(), query.as_any(), request)
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        command_info(&self.0.info.schema(), query.as_any(), request)
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        _: Request<Ticket>,
    ) -> Result<Response<Answers<FlightData>>, Status> {
        self.answer(sql_text(&ticket.statement_handle, "the statement's ticket")?).await
    }

    async fn do_get_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        _: Request<Ticket>,
    ) -> Result<Response<Answers<FlightData>>, Status> {
        self.answer(handle_text(&query.prepared_statement_handle)?).await
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        _: Request<Ticket>,
    ) -> Result<Response<Answers<FlightData>>, Status> {
        let mut b = query.into_builder();
        b.append(CATALOG);
        one_batch(b.build())
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        _: Request<Ticket>,
    ) -> Result<Response<Answers<FlightData>>, Status> {
        let runs = self.with_session(|s| Ok(s.runs().iter().map(|r| r.to_string()).collect::<Vec<_>>())).await?;
        let mut b = query.into_builder();
        b.append(CATALOG, SCHEMA);
        for r in runs.iter().filter(|r| *r != SCHEMA && !r.is_empty()) {
            b.append(CATALOG, r);
        }
        one_batch(b.build())
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        _: Request<Ticket>,
    ) -> Result<Response<Answers<FlightData>>, Status> {
        let columns = query.include_schema;
        let tables = self.with_session(move |s| Self::tables(s, columns)).await?;
        let mut b = query.into_builder();
        for (schema, table, columns) in &tables {
            b.append(CATALOG, schema, table, "TABLE", columns).map_err(|e| Status::internal(e.to_string()))?;
        }
        one_batch(b.build())
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        _: Request<Ticket>,
    ) -> Result<Response<Answers<FlightData>>, Status> {
        let mut b = query.into_builder();
        b.append("TABLE");
        one_batch(b.build())
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        _: Request<Ticket>,
    ) -> Result<Response<Answers<FlightData>>, Status> {
        one_batch(query.into_builder(&self.0.info).build())
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        _: Request<Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let sql = query.query.clone();
        let schema = self.with_session(move |s| s.answer_schema(&sql).map_err(|e| e.to_string())).await?;
        let options = arrow_ipc::writer::IpcWriteOptions::default();
        let IpcMessage(dataset_schema) = SchemaAsIpc::new(&schema, &options)
            .try_into()
            .map_err(|e: arrow_schema::ArrowError| Status::internal(e.to_string()))?;
        // The handle is the statement itself: the server keeps nothing.
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: query.query.into(),
            dataset_schema,
            parameter_schema: Default::default(),
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        _: ActionClosePreparedStatementRequest,
        _: Request<Action>,
    ) -> Result<(), Status> {
        Ok(())
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}
