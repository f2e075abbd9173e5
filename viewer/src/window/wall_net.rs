//! A powerwall over several hosts: `exaviz wall --serve ADDR` on the master and `exaviz wall
//! --join ADDR --tile C,R` on each display host. The master owns the interaction: it broadcasts
//! each frame's number and the shared pan and zoom, and releases the present of frame N only when
//! every tile has reported it ready (a software swap barrier, as DisplayCluster and SAGE2 do). A
//! tile that drops out (or does not answer within the timeout) is reported and the others go on;
//! a tile that joins again gets the current state with the next frame. Gestures on any tile are
//! sent to the master, which applies them to the next frame.
//!
//! The protocol is lines of text over TCP: tile to master `hello C R`, `ready N`, `pan DX DY`,
//! `zoom FACTOR X Y`, `reset`; master to tile `frame N OFFSET_X OFFSET_Y SCALE`, `present N`,
//! `quit`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use exaviz_render::View;
use exaviz_render::wall::Wall;

/// How long the master waits for a tile's answer before it counts the tile out.
pub const TILE_TIMEOUT: Duration = Duration::from_secs(5);

struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

fn send(c: &mut Conn, line: &str) -> std::io::Result<()> {
    c.writer.write_all(line.as_bytes())?;
    c.writer.write_all(b"\n")
}

/// A gesture a tile sent, applied to the shared view.
fn apply(view: &mut View, line: &str) -> bool {
    let w: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| w.get(i).and_then(|v| v.parse::<f32>().ok()).filter(|v| v.is_finite());
    match w.first().copied() {
        Some("pan") => {
            let (Some(dx), Some(dy)) = (num(1), num(2)) else { return false };
            view.offset[0] += dx;
            view.offset[1] += dy;
            true
        }
        Some("zoom") => {
            let (Some(f), Some(x), Some(y)) = (num(1), num(2), num(3)) else { return false };
            view.zoom_at(f, [x, y]);
            true
        }
        Some("reset") => {
            *view = View::default();
            true
        }
        _ => false,
    }
}

/// Accepts a tile: its `hello C R`, checked against the wall.
fn accept(wall: &Wall, stream: TcpStream) -> Result<((u32, u32), Conn)> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(TILE_TIMEOUT))?;
    stream.set_nodelay(true).ok();
    let writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).context("no hello")?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let (Some(&"hello"), Some(c), Some(r)) = (w.first(), w.get(1), w.get(2)) else {
        bail!("'{}' is not hello C R", line.trim())
    };
    let (c, r): (u32, u32) = (c.parse()?, r.parse()?);
    if c >= wall.columns || r >= wall.rows {
        bail!("tile {c},{r} is not on the {}x{} wall", wall.columns, wall.rows);
    }
    Ok(((c, r), Conn { reader, writer }))
}

/// The master: waits up to `join_timeout` for every tile, then runs frames until `frames` (or
/// forever), keeping the tiles in step.
pub fn serve(wall: &Wall, addr: &str, frames: Option<u64>, join_timeout: Duration) -> Result<()> {
    let listener = TcpListener::bind(addr).with_context(|| format!("--serve {addr}: cannot listen"))?;
    listener.set_nonblocking(true)?;
    let want = (wall.columns * wall.rows) as usize;
    eprintln!("wall master on {}: waiting for {want} tiles", listener.local_addr()?);
    let mut tiles: BTreeMap<(u32, u32), Conn> = BTreeMap::new();
    let take = |tiles: &mut BTreeMap<(u32, u32), Conn>| {
        while let Ok((stream, from)) = listener.accept() {
            match accept(wall, stream) {
                Ok((key, conn)) => {
                    let again = tiles.insert(key, conn).is_some();
                    eprintln!("tile {},{} {} from {from}", key.0, key.1, if again { "joined again" } else { "joined" });
                }
                Err(e) => eprintln!("warning: a host at {from} was refused: {e}"),
            }
        }
    };
    let started = Instant::now();
    while tiles.len() < want {
        take(&mut tiles);
        if started.elapsed() > join_timeout {
            let missing: Vec<String> = (0..wall.rows)
                .flat_map(|r| (0..wall.columns).map(move |c| (c, r)))
                .filter(|k| !tiles.contains_key(k))
                .map(|(c, r)| format!("{c},{r}"))
                .collect();
            bail!(
                "--serve {addr}: {} of the wall's {want} tiles joined in {} s; missing: {}",
                tiles.len(),
                join_timeout.as_secs(),
                missing.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut view = View::default();
    let mut frame = 0u64;
    loop {
        take(&mut tiles);
        if frames.is_some_and(|n| frame >= n) {
            break;
        }
        frame += 1;
        let msg = format!("frame {frame} {} {} {}", view.offset[0], view.offset[1], view.scale);
        let mut lost: Vec<((u32, u32), String)> = Vec::new();
        for (k, c) in tiles.iter_mut() {
            if let Err(e) = send(c, &msg) {
                lost.push((*k, e.to_string()));
            }
        }
        // The barrier: every tile's `ready N`, gestures applied to the next frame.
        let mut next = view;
        let mut moved = false;
        for (k, c) in tiles.iter_mut() {
            if lost.iter().any(|(l, _)| l == k) {
                continue;
            }
            loop {
                let mut line = String::new();
                match c.reader.read_line(&mut line) {
                    Ok(0) => {
                        lost.push((*k, "the connection closed".into()));
                        break;
                    }
                    Err(e) => {
                        lost.push((*k, format!("no answer ({e})")));
                        break;
                    }
                    Ok(_) if line.trim() == format!("ready {frame}") => break,
                    Ok(_) => moved |= apply(&mut next, line.trim()),
                }
            }
        }
        for (k, why) in &lost {
            tiles.remove(k);
            eprintln!("tile {},{} dropped out at frame {frame}: {why}; the others go on", k.0, k.1);
        }
        for c in tiles.values_mut() {
            let _ = send(c, &format!("present {frame}"));
        }
        eprintln!("frame {frame}: {} tiles presented", tiles.len());
        if moved {
            eprintln!("view: offset {:.0},{:.0} scale {:.3}", next.offset[0], next.offset[1], next.scale);
        }
        view = next;
        if frames.is_none() && !moved {
            std::thread::sleep(Duration::from_millis(30));
        }
    }
    for c in tiles.values_mut() {
        let _ = send(c, "quit");
    }
    eprintln!("presented {frame} frames");
    Ok(())
}

/// What the master tells a tile.
#[derive(Debug)]
pub enum FromMaster {
    Frame(u64, View),
    Present(u64),
    Quit,
    Lost(String),
}

/// Parses a master's line.
pub fn parse(line: &str) -> Option<FromMaster> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| w.get(i).and_then(|v| v.parse::<f32>().ok()).filter(|v| v.is_finite());
    match w.first().copied()? {
        "frame" => {
            let n = w.get(1)?.parse().ok()?;
            Some(FromMaster::Frame(n, View { offset: [num(2)?, num(3)?], scale: num(4)? }))
        }
        "present" => Some(FromMaster::Present(w.get(1)?.parse().ok()?)),
        "quit" => Some(FromMaster::Quit),
        _ => None,
    }
}

/// A tile's connection: `hello C R` sent, the master's lines forwarded to `deliver` from a
/// thread; returns the writer for `ready`, gestures and the like.
pub fn join(addr: &str, tile: (u32, u32), deliver: impl Fn(FromMaster) + Send + 'static) -> Result<TcpStream> {
    let stream = TcpStream::connect(addr).with_context(|| format!("--join {addr}: cannot reach the master"))?;
    stream.set_nodelay(true).ok();
    let mut writer = stream.try_clone()?;
    writeln!(writer, "hello {} {}", tile.0, tile.1)?;
    let reader = BufReader::new(stream);
    std::thread::spawn(move || {
        for line in reader.lines() {
            match line {
                Ok(l) => {
                    if let Some(m) = parse(&l) {
                        let quit = matches!(m, FromMaster::Quit);
                        deliver(m);
                        if quit {
                            return;
                        }
                    }
                }
                Err(e) => {
                    deliver(FromMaster::Lost(e.to_string()));
                    return;
                }
            }
        }
        deliver(FromMaster::Lost("the master closed the connection".into()));
    });
    Ok(writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_gestures_apply() {
        match parse("frame 7 -30 -20 1.5") {
            Some(FromMaster::Frame(7, v)) => assert_eq!((v.offset, v.scale), ([-30.0, -20.0], 1.5)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse("present 3"), Some(FromMaster::Present(3))));
        assert!(parse("frame x").is_none() && parse("frame 1 nan 0 1").is_none() && parse("").is_none());
        let mut v = View::default();
        assert!(apply(&mut v, "pan 5 -2"));
        assert_eq!(v.offset, [5.0, -2.0]);
        assert!(!apply(&mut v, "pan 5"));
        assert!(apply(&mut v, "reset"));
        assert_eq!(v, View::default());
    }
}
