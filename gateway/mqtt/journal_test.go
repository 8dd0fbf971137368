package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

func testWill(client string) *will {
	return &will{client: client, user: "alice", address: "q1", delay: 30 * time.Second,
		registered: time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC), stop: make(chan struct{}),
		pk: packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1, Retain: true},
			TopicName: "q1", Payload: []byte("gone\x00\xff")}}
}

func testJournal(t *testing.T) (*Journal, *bytes.Buffer) {
	var buf bytes.Buffer
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &Journal{Dir: dir, Log: slog.New(slog.NewTextHandler(&buf, nil))}, &buf
}

func files(t *testing.T, dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestJournalWriteLoadRemove(t *testing.T) {
	j, _ := testJournal(t)
	w := testWill("sensor-1")
	if err := j.Write(w); err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(w.journal) != j.Dir || !strings.HasSuffix(w.journal, journalSuffix) {
		t.Fatalf("file %q", w.journal)
	}
	st, err := os.Stat(w.journal)
	if err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("file mode %v, %v", st.Mode(), err)
	}
	got, err := j.Load()
	if err != nil || len(got) != 1 {
		t.Fatalf("load: %v %v", got, err)
	}
	g := got[0]
	if g.client != w.client || g.user != w.user || g.address != w.address || g.delay != w.delay ||
		!g.registered.Equal(w.registered) || g.pk.TopicName != "q1" || !bytes.Equal(g.pk.Payload, w.pk.Payload) ||
		g.pk.FixedHeader.Qos != 1 || !g.pk.FixedHeader.Retain || g.journal != w.journal {
		t.Fatalf("loaded %+v, wrote %+v", g, w)
	}
	// two wills of one client id (a takeover) have a file each
	w2 := testWill("sensor-1")
	if err := j.Write(w2); err != nil || w2.journal == w.journal {
		t.Fatalf("second will: %q %v", w2.journal, err)
	}
	j.Remove(w)
	if w.journal != "" {
		t.Fatal("Remove kept the file name")
	}
	if fs := files(t, j.Dir); len(fs) != 1 || filepath.Join(j.Dir, fs[0]) != w2.journal {
		t.Fatalf("left %v", fs)
	}
	j.Remove(w)                // twice: nothing
	(*Journal)(nil).Remove(w2) // no journal: nothing
	j.Remove(nil)
}

// The file holds what the will needs and no credential.
func TestJournalHoldsNoPassword(t *testing.T) {
	j, _ := testJournal(t)
	w := testWill("c")
	if err := j.Write(w); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(w.journal)
	for _, k := range []string{`"client"`, `"user"`, `"topic"`, `"address"`, `"payload"`, `"qos"`, `"retain"`,
		`"delay_seconds"`, `"registered"`} {
		if !bytes.Contains(data, []byte(k)) {
			t.Errorf("no %s in %s", k, data)
		}
	}
	if bytes.Contains(bytes.ToLower(data), []byte("password")) {
		t.Errorf("a password field: %s", data)
	}
}

// A client id never names a path: every file is in the directory.
func TestJournalUnsafeClientIDs(t *testing.T) {
	j, _ := testJournal(t)
	ids := []string{"../../../etc/passwd", "/abs", "a/b", "..", ".", "", "\x00nul", "x\\y", strings.Repeat("l", 65535),
		"ünï©ødé", ".tmp-x", "c.will"}
	for _, id := range ids {
		w := testWill(id)
		if err := j.Write(w); err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if filepath.Dir(w.journal) != j.Dir || len(filepath.Base(w.journal)) != 64+1+16+len(journalSuffix) {
			t.Errorf("%q: file %q", id, w.journal)
		}
	}
	if n := len(files(t, filepath.Dir(j.Dir))); n != 1 {
		t.Errorf("the parent holds %d entries", n)
	}
	got, err := j.Load()
	if err != nil || len(got) != len(ids) {
		t.Fatalf("load %d of %d: %v", len(got), len(ids), err)
	}
	seen := map[string]bool{}
	for _, w := range got {
		seen[w.client] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("%q not loaded", id)
		}
	}
}

func TestJournalCorruptFileSkipped(t *testing.T) {
	j, logs := testJournal(t)
	good := testWill("good")
	if err := j.Write(good); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"aa.1.will": `{"version": 1, "client": "x"`, // truncated
		"bb.2.will": `not json`,
		"cc.3.will": `{"version": 9, "client": "x", "topic": "q1", "address": "q1", "registered": "2026-11-27T14:00:00Z"}`,
		"dd.4.will": `{"version": 1, "client": "x", "topic": "q1", "address": "q1", "qos": 1}`,
		"ee.5.will": `{"version": 1, "client": "x", "topic": "q1", "address": "q1", "password": "p", "registered": "2026-11-27T14:00:00Z"}`,
	}
	for name, text := range bad {
		if err := os.WriteFile(filepath.Join(j.Dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// an interrupted write: removed; another file: ignored
	_ = os.WriteFile(filepath.Join(j.Dir, journalTmp+"123"), []byte("{"), 0o600)
	_ = os.WriteFile(filepath.Join(j.Dir, "README"), []byte("x"), 0o600)
	got, err := j.Load()
	if err != nil || len(got) != 1 || got[0].client != "good" {
		t.Fatalf("load: %v %v", got, err)
	}
	for name := range bad {
		if !strings.Contains(logs.String(), "file="+name) {
			t.Errorf("no log line for %s: %s", name, logs.String())
		}
		if _, err := os.Stat(filepath.Join(j.Dir, name)); err != nil {
			t.Errorf("%s not kept: %v", name, err)
		}
	}
	if n := strings.Count(logs.String(), "unreadable file skipped"); n != len(bad) {
		t.Errorf("%d log lines for %d files", n, len(bad))
	}
	if _, err := os.Stat(filepath.Join(j.Dir, journalTmp+"123")); !os.IsNotExist(err) {
		t.Errorf("temporary file kept: %v", err)
	}
}

func TestJournalWriteFailsInAMissingDirectory(t *testing.T) {
	j := &Journal{Dir: filepath.Join(t.TempDir(), "gone"), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w := testWill("c")
	if err := j.Write(w); err == nil || w.journal != "" {
		t.Fatalf("want an error, got %v (%q)", err, w.journal)
	}
}

// Without a service connection the journaled wills are logged, one line
// each without the payload, and kept.
func TestRecoverWithoutServiceConnectionKeepsFiles(t *testing.T) {
	j, logs := testJournal(t)
	for _, id := range []string{"a", "b"} {
		if err := j.Write(testWill(id)); err != nil {
			t.Fatal(err)
		}
	}
	b := &Bridge{Config: &Config{Space: "s"}, Journal: j, Log: j.Log}
	b.recoverWills()
	if n := strings.Count(logs.String(), "no service connection configured"); n != 2 {
		t.Errorf("%d lines: %s", n, logs.String())
	}
	if strings.Contains(logs.String(), "gone") {
		t.Errorf("the payload was logged: %s", logs.String())
	}
	if n := len(files(t, j.Dir)); n != 2 {
		t.Errorf("%d files left", n)
	}
}

func TestConfigStateDir(t *testing.T) {
	base := `"space": "s", "routers": ["127.0.0.1:5671"], "table_file": "/t.json", "listen_plain": ":1883"`
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	_ = os.Mkdir(open, 0o750)
	_ = os.Chmod(open, 0o750)
	ok := filepath.Join(dir, "ok")
	_ = os.Mkdir(ok, 0o700)
	file := filepath.Join(dir, "file")
	_ = os.WriteFile(file, nil, 0o600)
	cases := map[string]string{
		"relative":                   "must be an absolute path",
		filepath.Join(dir, "absent"): "no such file",
		file:                         "is not a directory",
		open:                         "group and others must have no access",
	}
	for value, want := range cases {
		p := filepath.Join(dir, "c.json")
		_ = os.WriteFile(p, []byte(`{`+base+`, "state_dir": "`+value+`"}`), 0o600)
		_, err := LoadConfig(p)
		if err == nil || !strings.Contains(err.Error(), "state_dir") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error naming state_dir (%s), got %v", value, want, err)
		}
	}
	p := filepath.Join(dir, "c.json")
	_ = os.WriteFile(p, []byte(`{`+base+`, "state_dir": "`+ok+`"}`), 0o600)
	c, err := LoadConfig(p)
	if err != nil || c.StateDir != ok {
		t.Fatalf("%v %v", c, err)
	}
	if fs := files(t, ok); len(fs) != 0 {
		t.Errorf("the check left %v", fs)
	}
}
