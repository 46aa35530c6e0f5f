// Conformance adapter for gocql v2 (github.com/apache/cassandra-gocql-driver/v2), per
// conformance/README.md: runs one case's workload through the driver's public API
// (ClusterConfig, Session) against the conformance server and prints one JSON object on
// stdout. Exit 0: every request succeeded; 1: the driver raised an error; 127: unsupported.
//
// Configuration: the contact point with the given port; --protocol default lets the driver
// negotiate (it tries v5 first, its highest), 4 and 5 pin ProtoVersion, 6 is unsupported
// (the driver stops at v5); --compression lz4 sets the driver's lz4.LZ4Compressor (on a v5
// connection the driver uses it for LZ4 frames); --auth sets a PasswordAuthenticator.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"github.com/apache/cassandra-gocql-driver/v2/lz4"
)

const selectQuery = "SELECT k, v FROM ks.t"

var actions = map[string]bool{
	"connect": true, "select": true, "prepare-select": true, "concurrent-select": true,
	"insert-large": true, "idle-select": true,
}

func describe(err error) string {
	return fmt.Sprintf("%T: %v", err, err)
}

func rowsReport(iter *gocql.Iter) map[string]any {
	h := sha256.New()
	n := 0
	var k int32
	var v []byte
	for iter.Scan(&k, &v) {
		var b [8]byte
		binary.BigEndian.PutUint32(b[:4], uint32(k))
		binary.BigEndian.PutUint32(b[4:], uint32(len(v)))
		h.Write(b[:])
		h.Write(v)
		n++
	}
	if err := iter.Close(); err != nil {
		return map[string]any{"error": describe(err)}
	}
	return map[string]any{"rows": n, "digest": hex.EncodeToString(h.Sum(nil))}
}

func driverVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/apache/cassandra-gocql-driver/v2" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func main() {
	os.Exit(run())
}

func run() int {
	host := flag.String("host", "127.0.0.1", "")
	port := flag.Int("port", 9042, "")
	caseID := flag.String("case", "", "")
	action := flag.String("action", "select", "")
	compression := flag.String("compression", "default", "")
	checksum := flag.String("checksum", "default", "")
	protocol := flag.String("protocol", "default", "")
	auth := flag.Bool("auth", false, "")
	blobSize := flag.Int("blob-size", 0, "")
	requests := flag.Int("requests", 0, "")
	timeout := flag.Float64("timeout", 10, "")
	flag.Parse()

	report := map[string]any{"driver": "gocql", "case": *caseID, "action": *action}
	emit := func(code int) int {
		out, _ := json.Marshal(report)
		fmt.Println(string(out))
		return code
	}
	if !actions[*action] {
		report["unsupported"] = fmt.Sprintf("unknown action %q", *action)
		return emit(127)
	}
	report["driver_version"] = driverVersion()

	cluster := gocql.NewCluster(*host)
	cluster.Port = *port
	t := time.Duration(*timeout * float64(time.Second))
	cluster.Timeout = t
	cluster.ConnectTimeout = t
	cluster.NumConns = 1
	cluster.Logger = gocql.NewLogger(gocql.LogLevelWarn)
	// One attempt per request: a fault must surface as the request's failure.
	cluster.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 0}
	switch *protocol {
	case "4":
		cluster.ProtoVersion = 4
	case "5":
		cluster.ProtoVersion = 5
	case "6":
		report["unsupported"] = "gocql supports protocol versions up to v5 (no v6-beta)"
		return emit(127)
	}
	switch *compression {
	case "lz4":
		cluster.Compressor = lz4.LZ4Compressor{}
	case "none":
		cluster.Compressor = nil
	}
	if *auth {
		cluster.Authenticator = gocql.PasswordAuthenticator{Username: "cassandra", Password: "cassandra"}
	}
	if *checksum == "crc32c" {
		report["checksum_option"] = "not available in this driver"
	}
	if *action == "idle-select" {
		// gocql sends a heartbeat (OPTIONS) on every idle connection; it is not configurable.
		report["heartbeat"] = "driver built-in"
	}

	results := []map[string]any{}
	var topErr any
	session, err := cluster.CreateSession()
	if err != nil {
		topErr = describe(err)
	} else {
		ctx := context.Background()
		switch *action {
		case "connect":
			var v string
			if err := session.Query("SELECT release_version FROM system.local").WithContext(ctx).Scan(&v); err != nil {
				results = append(results, map[string]any{"error": describe(err)})
			} else {
				results = append(results, map[string]any{"ok": true})
			}
		case "select":
			results = append(results, rowsReport(session.Query(selectQuery).WithContext(ctx).Iter()))
		case "idle-select":
			time.Sleep(3 * time.Second)
			results = append(results, rowsReport(session.Query(selectQuery).WithContext(ctx).Iter()))
		case "prepare-select":
			// gocql prepares every statement with bind markers or not: Query().Iter() sends
			// PREPARE then EXECUTE (it has no separate prepare call).
			results = append(results, rowsReport(session.Query(selectQuery).WithContext(ctx).Iter()))
		case "concurrent-select":
			n := *requests
			if n < 1 {
				n = 1
			}
			out := make([]map[string]any, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					out[i] = rowsReport(session.Query(selectQuery).WithContext(ctx).Iter())
				}(i)
			}
			wg.Wait()
			results = append(results, out...)
		case "insert-large":
			buf := make([]byte, 0, 2**blobSize+64)
			buf = append(buf, "INSERT INTO ks.t (k, v) VALUES (1, 0x"...)
			blob := make([]byte, *blobSize)
			for i := range blob {
				blob[i] = byte((i*7 + 3) & 0xff)
			}
			buf = append(buf, hex.EncodeToString(blob)...)
			buf = append(buf, ')')
			if err := session.Query(string(buf)).WithContext(ctx).Exec(); err != nil {
				results = append(results, map[string]any{"error": describe(err)})
			} else {
				results = append(results, map[string]any{"ok": true})
			}
		}
		session.Close()
	}
	report["results"] = results
	report["error"] = topErr
	failed := topErr != nil
	for _, r := range results {
		if _, ok := r["error"]; ok {
			failed = true
		}
	}
	if failed {
		return emit(1)
	}
	return emit(0)
}
