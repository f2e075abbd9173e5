//! The byte streams gRPC runs over besides TCP: a server's standard input and output, and a
//! client's `ssh` child process (whose standard input and output are the server's).

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// This process's standard input and output as one connection; `closed` is sent when the
/// input ends (the client went away).
pub struct Stdio {
    input: tokio::io::Stdin,
    output: tokio::io::Stdout,
    closed: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Stdio {
    pub fn new(closed: tokio::sync::oneshot::Sender<()>) -> Self {
        Self { input: tokio::io::stdin(), output: tokio::io::stdout(), closed: Some(closed) }
    }
}

impl tonic::transport::server::Connected for Stdio {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for Stdio {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.input).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r
            && buf.filled().len() == before
            && let Some(c) = self.closed.take()
        {
            let _ = c.send(());
        }
        r
    }
}

impl AsyncWrite for Stdio {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.output).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.output).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.output).poll_shutdown(cx)
    }
}

/// A child process's standard output and input as one connection (the child is killed when
/// the connection is dropped).
pub struct Child {
    _child: tokio::process::Child,
    output: tokio::process::ChildStdout,
    input: tokio::process::ChildStdin,
}

/// What a child wrote to its standard error (its last line), and whether it closed it.
pub type Said = std::sync::Arc<std::sync::Mutex<(String, bool)>>;

impl Child {
    /// Starts `program args...` with its standard input and output piped to this connection;
    /// the last line it writes to its standard error is kept in `said` (the reason a remote
    /// server stopped).
    pub fn spawn(program: &str, args: &[String], said: Said) -> std::io::Result<Self> {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let output = child.stdout.take().ok_or_else(|| std::io::Error::other("no standard output"))?;
        let input = child.stdin.take().ok_or_else(|| std::io::Error::other("no standard input"))?;
        if let Some(err) = child.stderr.take() {
            if let Ok(mut s) = said.lock() {
                *s = (String::new(), false);
            }
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Ok(mut s) = said.lock()
                        && !line.trim().is_empty()
                    {
                        s.0 = line.trim().trim_start_matches("error: ").to_string();
                    }
                }
                if let Ok(mut s) = said.lock() {
                    s.1 = true;
                }
            });
        }
        Ok(Self { _child: child, output, input })
    }
}

impl AsyncRead for Child {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.output).poll_read(cx, buf)
    }
}

impl AsyncWrite for Child {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.input).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.input).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.input).poll_shutdown(cx)
    }
}
