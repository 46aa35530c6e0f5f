//! `cqlframe pcap`: a session's two byte streams as a pcap capture of one TCP connection
//! (Ethernet / IPv4 / TCP, client 127.0.0.1:50042 to server 127.0.0.1:9042), for Wireshark.

use crate::Failure;
use clap::Args as ClapArgs;
use cqlframe_harness::pcap::write::{
    self as capture, HandshakeWrites, Options, Peer, Turn, DEFAULT_MSS, MAX_MSS,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Write a session's byte streams as a pcap capture (one TCP connection to port 9042).
///
/// With --case, the streams and the point where the server answers STARTUP come from
/// vectors/manifest.json, and the capture equals `vectors/pcap/<case>.pcap` at the default MSS.
/// With --client/--server, the client's whole stream is sent first, then the server's whole
/// stream, unless --server-responds-after (and --server-switch) give the handshake split the
/// way the manifest's session fields do.
#[derive(ClapArgs)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["case", "client"]))]
pub struct Args {
    /// A session case of vectors/manifest.json, e.g. session.v5-lz4.
    #[arg(long, conflicts_with_all = ["client", "server", "server_responds_after", "server_switch", "handshake_together"])]
    case: Option<String>,
    /// Repository root (holds vectors/), for --case.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// File with the bytes the client sent.
    #[arg(long, requires = "server")]
    client: Option<PathBuf>,
    /// File with the bytes the server sent.
    #[arg(long, requires = "client")]
    server: Option<PathBuf>,
    /// Client bytes the server has received when it answers STARTUP (the manifest's
    /// server_responds_after); splits the handshake from the rest.
    #[arg(long, requires = "client")]
    server_responds_after: Option<usize>,
    /// Offset in the server stream just after its STARTUP response (the manifest's
    /// server_switch_offset); default: the whole server stream belongs to the handshake.
    #[arg(long, requires = "server_responds_after")]
    server_switch: Option<usize>,
    /// With --server-responds-after: each end wrote its handshake envelopes in one write (the
    /// manifest's handshake_writes `together`), not in lock step.
    #[arg(long, requires = "server_responds_after")]
    handshake_together: bool,
    /// Largest TCP payload per segment (1 to 65495); 1 or 7 exercise a dissector's reassembly.
    #[arg(long, default_value_t = DEFAULT_MSS as u16, value_parser = clap::value_parser!(u16).range(1..=MAX_MSS as i64))]
    mss: u16,
    /// The pcap file to write.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| Failure::Io(format!("{}: {e}", path.display())))
    };
    let (client, server, split) = match (&args.case, &args.client, &args.server) {
        (Some(id), _, _) => {
            let (client, server, server_switch, responds_after, writes) =
                from_manifest(&args.root, id)?;
            (
                read(&client)?,
                read(&server)?,
                Some((server_switch, responds_after, writes)),
            )
        }
        (None, Some(c), Some(s)) => {
            let writes = if args.handshake_together {
                HandshakeWrites::Together
            } else {
                HandshakeWrites::LockStep
            };
            (
                read(c)?,
                read(s)?,
                args.server_responds_after
                    .map(|after| (args.server_switch, after, writes)),
            )
        }
        _ => unreachable!("clap requires --case or --client with --server"),
    };
    let turns = match split {
        Some((server_switch, after, writes)) => {
            capture::session_turns(&client, &server, server_switch, after, writes)
                .map_err(|e| Failure::Io(e.to_string()))?
        }
        None => vec![
            Turn {
                from: Peer::Client,
                bytes: &client,
            },
            Turn {
                from: Peer::Server,
                bytes: &server,
            },
        ]
        .into_iter()
        .filter(|t| !t.bytes.is_empty())
        .collect(),
    };
    let bytes = capture::pcap(&turns, &Options::default().resegment(usize::from(args.mss)))
        .map_err(|e| Failure::Io(e.to_string()))?;
    std::fs::write(&args.output, &bytes)
        .map_err(|e| Failure::Io(format!("{}: {e}", args.output.display())))?;
    Ok(())
}

/// The stream files, `server_switch_offset`, `server_responds_after` and `handshake_writes` of a
/// session case.
fn from_manifest(
    root: &Path,
    id: &str,
) -> Result<(PathBuf, PathBuf, Option<usize>, usize, HandshakeWrites), Failure> {
    let vectors = root.join("vectors");
    let path = vectors.join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
    let manifest: Value =
        serde_json::from_str(&text).map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?;
    let case = manifest["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["id"] == id))
        .ok_or_else(|| Failure::Io(format!("{}: no case {id}", path.display())))?;
    if case["kind"] != "session" {
        return Err(Failure::Io(format!("{id} is not a session case")));
    }
    let bad = |field: &str| Failure::Io(format!("{id}: bad or missing {field} in the manifest"));
    let file = |side: &str| {
        case[side]["file"]
            .as_str()
            .map(|f| vectors.join(f))
            .ok_or_else(|| bad(side))
    };
    let offset = |field: &str| {
        let v = &case[field];
        match v.as_u64() {
            Some(n) => Ok(Some(n as usize)),
            None if v.is_null() => Ok(None),
            None => Err(bad(field)),
        }
    };
    Ok((
        file("client_stream")?,
        file("server_stream")?,
        offset("server_switch_offset")?,
        offset("server_responds_after")?.ok_or_else(|| bad("server_responds_after"))?,
        case["handshake_writes"]
            .as_str()
            .and_then(HandshakeWrites::from_name)
            .ok_or_else(|| bad("handshake_writes"))?,
    ))
}
