#!/usr/bin/env python3
"""The README's first screen works for a reader who has only it: the block of "Over a socket"
marked `<!-- front-door: ... -->` is taken from README.md as it stands and every line of it is
run, in an empty folder outside the kit, with an empty CARGO_HOME (crates come from crates.io),
REPOSITORY-URL a fresh clone of this checkout's HEAD (`file://`) and PATH/TO/run the reference
adapter copied out of the tree. So `cargo install --git` is what installs `cqlframe`, and every
run's report has the number of cases the line's comment says, each a PASS for `me`.

Then the installed command outside the kit: the bundled drivers found from the checkout cargo
keeps; with that checkout gone (cargo's cache cleaning), an adapter still runs (the catalogue is
built in), asking for the bundled drivers fails with a message naming --adapter and
--drivers-dir, and --drivers-dir of a checkout of the kit runs them.

The install builds as a user's does, in a fresh target folder of cargo's own (about 3 minutes
on two cores): a target folder kept between runs would hand back a build of an earlier commit
when only files outside the crates changed, with that commit's source path built in.

Usage: python3 tools/test_front_door.py  (commit first: the clone is of HEAD)
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "<!-- front-door:"


def fail(why):
    sys.exit("test_front_door: " + why)


def readme_lines():
    """The command lines of the marked block of README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    if text.count(MARK) != 1:
        fail("README.md has %d blocks marked %r, not one" % (text.count(MARK), MARK))
    block = re.search(r"```sh\n(.*?)```", text.split(MARK, 1)[1], re.S)
    if not block:
        fail("no ```sh block after the front-door mark of README.md")
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    if not lines or not lines[0].startswith("cargo install "):
        fail("the front-door block does not start with cargo install: %r" % lines[:1])
    return lines


def expected_count(line, catalogue):
    """The number of cases a run line's comment promises ("14 cases", "one case"), checked
    against the catalogue's selection for the line's options."""
    comment = line.split("#", 1)[1] if "#" in line else ""
    said = re.search(r"\b(\d+|one) cases?\b", comment)
    if not said:
        fail("the README line %r does not say how many cases it runs" % line)
    n = 1 if said.group(1) == "one" else int(said.group(1))
    if "--cases" in line:
        selected = len(line.split("--cases", 1)[1].split("#")[0].split()[0].split(","))
    elif "--quick" in line:
        selected = sum(1 for c in catalogue if c.get("quick"))
    else:
        selected = len(catalogue)
    if n != selected:
        fail("the README line %r says %d cases; the catalogue selects %d" % (line, n, selected))
    return n


def run(command, cwd, env, want=0):
    shell = isinstance(command, str)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, shell=shell,
                          executable="/bin/bash" if shell else None)
    if want is not None and done.returncode != want:
        fail("%s exited %d, not %d:\n%s%s" % (command, done.returncode, want,
                                             done.stdout[-3000:], done.stderr[-3000:]))
    return done


def passes(folder, driver, count, what):
    """The report in `folder` has `count` results for `driver`, every one a PASS."""
    report = json.loads((folder / "build/conformance/report.json").read_text(encoding="utf-8"))
    mine = [r for r in report["results"] if r["driver"] == driver]
    bad = [(r["case"], r["outcome"]) for r in mine if r["outcome"] != "PASS"]
    if len(mine) != count or bad:
        fail("%s: %d results for %s (expected %d), not PASS: %s" % (what, len(mine), driver,
                                                                      count, bad))
    print("test_front_door: %s: %d cases, all PASS" % (what, count))


def main():
    lines = readme_lines()
    catalogue = tomllib.loads((ROOT / "conformance/cases.toml").read_text())["case"]
    scratch = Path(tempfile.mkdtemp(prefix="front-door-"))
    try:
        kit = scratch / "kit"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(kit)], check=True)
        home = scratch / "cargo-home"
        home.mkdir()
        env = dict(os.environ)
        for leaked in ("CQLFRAME_BIN", "RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR"):
            env.pop(leaked, None)
        env["CARGO_HOME"] = str(home)
        # cqlframe installed outside the kit, as on a driver author's machine: a binary inside a
        # checkout finds its bundled drivers from there
        installed = scratch / "installed"
        env["CARGO_INSTALL_ROOT"] = str(installed)
        # rustup's proxies find their toolchains in RUSTUP_HOME, which an empty CARGO_HOME moves.
        env.setdefault("RUSTUP_HOME", str(Path.home() / ".rustup"))
        env["PATH"] = "%s:%s" % (installed / "bin", env["PATH"])
        # The driver's repository, nowhere near a conformance/ folder.
        driver = scratch / "driver"
        (driver / "adapter").mkdir(parents=True)
        if any((d / "conformance/drivers").is_dir() for d in driver.parents):
            fail("a conformance/drivers above %s: the test would find it" % driver)
        adapter = driver / "adapter/run"
        shutil.copy(ROOT / "conformance/drivers/reference/run", adapter)
        placeholders = {"REPOSITORY-URL": "file://%s" % kit, "PATH/TO/run": str(adapter)}

        for line in lines:
            command = line
            for word, value in placeholders.items():
                command = command.replace(word, value)
            print("test_front_door: $ %s" % line)
            run("nice -n 10 " + command if line.startswith("cargo ") else command, driver, env)
            if line.startswith("cargo install "):
                found = shutil.which("cqlframe", path=env["PATH"])
                if found != str(installed / "bin/cqlframe"):
                    fail("cqlframe on PATH is %s, not the one installed in %s" % (found, installed))
            else:
                passes(driver, "me", expected_count(line, catalogue), line.split("#")[0].strip())

        one = ["--cases", "handshake.uncompressed"]
        bundled = ["cqlframe", "conformance", "--drivers", "reference"] + one
        checkouts = home / "git/checkouts"
        if not checkouts.is_dir():
            fail("cargo install --git kept no checkout under %s" % checkouts)
        run(bundled, driver, env)
        passes(driver, "reference", 1, "the bundled reference adapter, from cargo's checkout")

        shutil.rmtree(checkouts)
        run(["cqlframe", "conformance", "--adapter", "me=%s" % adapter] + one, driver, env)
        passes(driver, "me", 1, "--adapter with cargo's checkout gone (the catalogue built in)")
        refused = run(bundled, driver, env, want=None)
        message = refused.stderr
        if refused.returncode == 0 or not all(w in message for w in (
                "conformance/drivers", "--adapter NAME=PATH", "--drivers-dir KIT/conformance/drivers")):
            fail("the bundled drivers asked for with no kit around: exit %d, message %r"
                 % (refused.returncode, message))
        print("test_front_door: no kit around, the bundled drivers refused: %s" % message.strip())
        run(bundled + ["--drivers-dir", str(kit / "conformance/drivers")], driver, env)
        passes(driver, "reference", 1, "--drivers-dir of a checkout of the kit")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
