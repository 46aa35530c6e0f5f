//! `CQLFRAME_CRC_PATH` forces the path of the public functions. The variable is read once per
//! process, so each forced path is checked in a child process running this same test binary.

use cqlframe_checksum::{
    available_paths, crc24, crc32, crc32_append, crc32c, crc32c_append, selected_path,
    selected_paths, Algorithm, Path, ENV_PATH,
};

const CHILD_TEST: &str = "child_reports_its_paths";

/// In a child (the variable set), checks the selection and the values; in the parent, a no-op.
#[test]
fn child_reports_its_paths() {
    let Ok(name) = std::env::var(ENV_PATH) else {
        return;
    };
    let forced = Path::from_name(&name);
    for (algorithm, label) in [
        (Algorithm::Crc24, "crc24"),
        (Algorithm::Crc32, "crc32"),
        (Algorithm::Crc32c, "crc32c"),
    ] {
        let selected = selected_path(algorithm);
        let summary = selected_paths();
        let entry = format!("{label}={}", selected.name());
        assert!(summary.split(' ').any(|e| e == entry), "{summary}");
        if let Some(forced) = forced.filter(|p| p.computes(algorithm) && p.is_available()) {
            assert_eq!(selected, forced, "{algorithm:?} under {name}");
        } else {
            assert_ne!(
                selected,
                Path::Bitwise,
                "{algorithm:?} under {name}: automatic choice"
            );
        }
    }
    assert_eq!(crc24(b"123456789"), 0x4B_3F02);
    assert_eq!(crc32(b"123456789"), 0xE2A2_61A7);
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    let long: Vec<u8> = (0..5000u32).map(|i| ((i * 131) >> 3) as u8).collect();
    assert_eq!(crc32(&long), cqlframe_checksum::bitwise::crc32(&long));
    assert_eq!(crc32c(&long), cqlframe_checksum::bitwise::crc32c(&long));
    // The appending forms, through the same forced path (or its fallback).
    let mut out = vec![1, 2, 3, 4, 5, 6];
    assert_eq!(crc32_append(&long, &mut out), crc32(&long));
    assert_eq!(crc32c_append(&long, &mut out), crc32c(&long));
    assert!(out[6..] == [long.as_slice(), &long].concat());
    println!(
        "forced {name}: {:?}",
        [Algorithm::Crc24, Algorithm::Crc32, Algorithm::Crc32c].map(selected_path)
    );
}

#[test]
fn each_forced_path_is_used() {
    if std::env::var_os(ENV_PATH).is_some() {
        return; // a child
    }
    let exe = std::env::current_exe().expect("test binary path");
    let mut names: Vec<&str> = available_paths().into_iter().map(Path::name).collect();
    names.push("no-such-path");
    for name in names {
        let out = std::process::Command::new(&exe)
            .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(ENV_PATH, name)
            .output()
            .expect("run the test binary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(&format!("forced {name}")),
            "{ENV_PATH}={name}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
