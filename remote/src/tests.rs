//! The server against malformed and hostile requests, and the client against damaged answers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightData, Ticket};
use futures::StreamExt;

use crate::protocol::{Ask, Request, RowsAsk};
use crate::server::{Served, spawn};
use exaviz_model::dataset::CellsAsk;

fn store(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("exaviz-remote-unit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("served")).unwrap();
    exaviz_datasets::convert("gen:fd4?ranks=16&messages=20000", &dir.join("served/s.exaviz"), &|_, _| {}).unwrap();
    dir
}

/// Sends raw `ticket` bytes: the data messages received, or the error status's message.
async fn get(client: &mut FlightServiceClient<tonic::transport::Channel>, ticket: Vec<u8>) -> Result<usize, String> {
    let response = client.do_get(Ticket { ticket: ticket.into() }).await.map_err(|s| s.message().to_string())?;
    let mut stream = response.into_inner();
    let mut n = 0;
    while let Some(d) = stream.next().await {
        let _: FlightData = d.map_err(|s| s.message().to_string())?;
        n += 1;
    }
    Ok(n)
}

/// A channel to the server at `addr`.
async fn connect(addr: std::net::SocketAddr) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap()
}

/// Files of a folder with their sizes and modification times.
fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let m = e.metadata().unwrap();
            (e.file_name().to_string_lossy().into_owned(), m.len(), m.modified().unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn malformed_and_hostile_requests_get_one_line_and_the_server_keeps_answering() {
    let dir = store("hostile");
    let served = dir.join("served");
    let before = listing(&served.join("s.exaviz"));
    let server = spawn(Served::new(std::slice::from_ref(&served), std::time::Duration::ZERO).unwrap()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let channel = connect(server.addr).await;
        let mut client = FlightServiceClient::new(channel);
        let head = Request { store: "s.exaviz".into(), ask: Ask::Head }.ticket();
        assert!(get(&mut client, head.clone()).await.unwrap() > 1);
        let rows = |budget| Request {
            store: "s.exaviz".into(),
            ask: Ask::Rows(RowsAsk { t0: 0, t1: u64::MAX, budget, parts: Vec::new(), cells: None }),
        };
        let cells = |change: fn(&mut CellsAsk)| {
            let mut c = CellsAsk {
                window: (0, u64::MAX),
                plot: [0, 0, 64, 32],
                rows: 0,
                summary: 0,
                states: 0,
                opened: None,
                above: 0,
            };
            change(&mut c);
            let ask = RowsAsk { t0: 0, t1: u64::MAX, budget: u64::MAX, parts: Vec::new(), cells: Some(c) };
            Request { store: "s.exaviz".into(), ask: Ask::Rows(ask) }
        };
        // A window's cells, where asked for above no rows: three parts.
        assert!(get(&mut client, cells(|_| {}).ticket()).await.unwrap() > 3);
        // Over the budget: the schema alone.
        assert_eq!(get(&mut client, rows(0).ticket()).await.unwrap(), 1);
        assert!(get(&mut client, rows(u64::MAX).ticket()).await.unwrap() > 2);
        let outside = dir.join("s.exaviz").display().to_string();
        let bad: Vec<(Vec<u8>, &str)> = vec![
            // Not JSON: SQL text (the standard calls' tickets), here no statement.
            (b"garbage".to_vec(), "garbage"),
            (vec![b' '; 5000], "the ticket: empty"),
            (vec![0xff, 0xfe], "neither a Flight SQL message nor SQL text"),
            (b"{garbage".to_vec(), "not an exaviz request"),
            ([b"{".as_slice(), &[b' '; 5000]].concat(), "at most 4096"),
            (vec![b'{'; 200_000], ""),
            (Request { store: "../s.exaviz".into(), ask: Ask::Head }.ticket(), "not below a folder"),
            (Request { store: outside, ask: Ask::Head }.ticket(), "not below a folder"),
            (Request { store: "/etc/passwd".into(), ask: Ask::Head }.ticket(), "not below a folder"),
            (Request { store: "nothing.exaviz".into(), ask: Ask::Head }.ticket(), "no such store"),
            // Cells of a picture larger than a server draws, of an unknown option, of a location
            // the trace lacks, of another window than the rows'.
            (cells(|c| c.plot = [0, 0, 100_000, 100_000]).ticket(), "a plot of 100000x100000 pixels"),
            (cells(|c| c.rows = 9).ticket(), "rows 9"),
            (cells(|c| c.opened = Some(1_000_000)).ticket(), "location 1000000 opened (there are 16)"),
            (cells(|c| c.window = (5, 9)).ticket(), "asked with the rows of"),
        ];
        for (ticket, says) in bad {
            let e = get(&mut client, ticket).await.unwrap_err();
            assert!(e.contains(says) && !e.contains('\n') && !e.is_empty(), "{e}");
        }
        // A mutation fuzz through the whole server: every answer is data or one line.
        let mut rng = exaviz_model::rng::SplitMix64(0x2545_f491_4f6c_dd1d);
        let mut next = move || rng.next_u64();
        let seeds = [head.clone(), rows(5_000_000).ticket(), cells(|_| {}).ticket()];
        for k in 0..450 {
            let mut t = seeds[k % 3].clone();
            let i = (next() as usize) % t.len();
            match next() % 3 {
                0 => t[i] = next() as u8,
                1 => t.truncate(i),
                _ => t.insert(i, b"./\\{}\"0"[(next() % 7) as usize]),
            }
            if let Err(e) = get(&mut client, t).await {
                assert!(!e.contains('\n'), "{e}");
            }
        }
        // The server never writes.
        let put = client.do_put(futures::stream::iter(Vec::<FlightData>::new())).await.unwrap_err();
        assert_eq!(put.code(), tonic::Code::Unimplemented);
        assert!(get(&mut client, head).await.unwrap() > 1);
    });
    drop(server);
    assert_eq!(listing(&served.join("s.exaviz")), before, "the server changed the store");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A damaged answer (a store's files flipped on the way) opens or is refused in one line,
/// never a panic: the held files go through the store's own checks.
#[test]
fn damaged_files_from_a_server_are_refused_in_one_line() {
    let dir = store("damaged");
    let path = dir.join("served/s.exaviz");
    let files: std::collections::BTreeMap<String, bytes::Bytes> = std::fs::read_dir(&path)
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap().into()))
        .collect();
    let names: Vec<String> = files.keys().cloned().collect();
    let mut rng = exaviz_model::rng::SplitMix64(0x9e37_79b9_7f4a_7c15);
    let mut next = move || rng.next_u64();
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..200 {
        let mut damaged = files.clone();
        let name = &names[(next() as usize) % names.len()];
        let mut b = damaged[name].to_vec();
        if b.is_empty() {
            continue;
        }
        let i = (next() as usize) % b.len();
        if next() % 2 == 0 {
            b[i] ^= 1 << (next() % 8);
        } else {
            b.truncate(i);
        }
        damaged.insert(name.clone(), b.into());
        let held = exaviz_store::Files::Held { at: "grpc://h:1/s.exaviz".into(), files: Arc::new(damaged) };
        let result = std::panic::catch_unwind(|| {
            exaviz_store::open_in(&held, &|_, _| {}, u64::MAX, &|_, _| unreachable!()).map(|_| ())
        });
        match result.expect("no panic") {
            Ok(()) => opened += 1,
            Err(e) => {
                let e = e.to_string();
                assert!(e.starts_with("grpc://h:1/s.exaviz") && !e.contains('\n'), "{e}");
                refused += 1;
            }
        }
    }
    assert!(refused > 0, "{opened} opened, {refused} refused");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Any Flight client finds the served store's tables and reads them as plain rows; a Flight SQL
/// client runs statements and prepared statements and reads the catalog; what would write is
/// refused in one line.
#[cfg(feature = "sql")]
#[test]
fn standard_flight_and_flight_sql_answer_plain_rows() {
    use arrow_array::{Array, RecordBatch, cast::AsArray, types::Int64Type};
    use arrow_flight::sql::client::FlightSqlServiceClient;
    use arrow_flight::{FlightClient, FlightDescriptor, FlightInfo};
    use futures::TryStreamExt;
    let dir = store("standard");
    let served = dir.join("served");
    let d = exaviz_datasets::open(served.join("s.exaviz").to_str().unwrap()).unwrap();
    let messages = d.trace.messages.source.len();
    let server = spawn(Served::new(std::slice::from_ref(&served), std::time::Duration::ZERO).unwrap()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let channel = connect(server.addr).await;
        let rows = |b: &[RecordBatch]| b.iter().map(RecordBatch::num_rows).sum::<usize>();
        let mut flight = FlightClient::new(channel.clone());
        let infos: Vec<FlightInfo> = flight.list_flights("").await.unwrap().try_collect().await.unwrap();
        let paths: Vec<Vec<String>> = infos.iter().map(|i| i.flight_descriptor.clone().unwrap().path).collect();
        let want: Vec<Vec<String>> =
            exaviz_query::TABLES.iter().map(|t| vec!["s.exaviz".into(), t.to_string()]).collect();
        assert_eq!(paths, want);
        let m = &infos[4];
        let schema = m.clone().try_decode_schema().unwrap();
        assert!(schema.column_with_name("sender").is_some() && schema.column_with_name("send_s").is_some());
        let got: Vec<RecordBatch> =
            flight.do_get(m.endpoint[0].ticket.clone().unwrap()).await.unwrap().try_collect().await.unwrap();
        assert_eq!(rows(&got), messages);
        assert_eq!(got[0].schema().fields(), schema.fields());
        // A path of a table alone, GetSchema, and SQL text as a command.
        let plain = flight.get_schema(FlightDescriptor::new_path(vec!["messages".into()])).await.unwrap();
        assert_eq!(plain.fields(), schema.fields());
        let cmd = FlightDescriptor::new_cmd("SELECT count(*) AS n FROM \"s.exaviz\".messages");
        let info = flight.get_flight_info(cmd).await.unwrap();
        let got: Vec<RecordBatch> =
            flight.do_get(info.endpoint[0].ticket.clone().unwrap()).await.unwrap().try_collect().await.unwrap();
        assert_eq!(got[0].column(0).as_primitive::<Int64Type>().value(0) as usize, messages);
        for (path, says) in [
            (vec!["slices".to_string()], "no table 'slices'"),
            (vec!["x".into(), "messages".into()], "x: no such store"),
        ] {
            let e = flight.get_flight_info(FlightDescriptor::new_path(path)).await.unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        // Flight SQL: a statement, a prepared statement, the catalog; nothing written.
        let mut sql = FlightSqlServiceClient::new(channel);
        let count = "SELECT count(*) AS n FROM messages WHERE bytes > 0";
        let want = d.trace.messages.bytes.iter().filter(|&&b| b > 0).count();
        let info = sql.execute(count.into(), None).await.unwrap();
        let got: Vec<RecordBatch> =
            sql.do_get(info.endpoint[0].ticket.clone().unwrap()).await.unwrap().try_collect().await.unwrap();
        assert_eq!(got[0].column(0).as_primitive::<Int64Type>().value(0) as usize, want);
        let mut prepared = sql.prepare(count.into(), None).await.unwrap();
        assert_eq!(prepared.dataset_schema().unwrap().field(0).name(), "n");
        let info = prepared.execute().await.unwrap();
        let got: Vec<RecordBatch> =
            sql.do_get(info.endpoint[0].ticket.clone().unwrap()).await.unwrap().try_collect().await.unwrap();
        assert_eq!(got[0].column(0).as_primitive::<Int64Type>().value(0) as usize, want);
        prepared.close().await.unwrap();
        let schemas = arrow_flight::sql::CommandGetDbSchemas::default();
        let info = sql.get_db_schemas(schemas).await.unwrap();
        let got: Vec<RecordBatch> =
            sql.do_get(info.endpoint[0].ticket.clone().unwrap()).await.unwrap().try_collect().await.unwrap();
        let names = got[0].column(1).as_string::<i32>();
        assert_eq!((0..names.len()).map(|i| names.value(i)).collect::<Vec<_>>(), ["public", "s.exaviz"]);
        for write in ["DELETE FROM messages", "CREATE TABLE x AS SELECT 1", "SELECT * FROM slices"] {
            let e = sql.execute(write.into(), None).await.unwrap_err().to_string();
            assert!(!e.contains('\n') && (e.contains("read-only") || e.contains("no table")), "{write}: {e}");
        }
    });
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}
