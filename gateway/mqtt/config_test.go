package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	base := `"space": "s", "routers": ["127.0.0.1:5671"], "table_file": "/t.json"`
	cases := map[string]string{
		`{` + base + `}`: "listen_tls",
		`{` + base + `, "listen_tls": "127.0.0.1:8883"}`:                               "tls_cert_file",
		`{` + base + `, "listen_plain": "nohostport"}`:                                 "listen_plain",
		`{"space": "s", "listen_plain": ":1883", "table_file": "/t"}`:                  "routers",
		`{` + base + `, "listen_plain": ":1883", "max_packet_size": 1}`:                "max_packet_size",
		`{` + base + `, "listen_plain": ":1883", "receive_maximum": 0}`:                "receive_maximum",
		`{` + base + `, "listen_plain": ":1883", "log_level": "trace"}`:                "log_level",
		`{` + base + `, "listen_plain": ":1883", "max_session_expiry": -1}`:            "max_session_expiry",
		`{` + base + `, "listen_plain": ":1883", "max_session_expiry": 4294967296}`:    "max_session_expiry",
		`{` + base + `, "listen_plain": ":1883", "routers": ["h:0"]}`:                  "routers[0]",
		`{` + base + `, "listen_plain": ":1883", "typo_field": 1}`:                     "typo_field",
		`{"listen_plain": ":1883", "routers": ["h:1"], "table_file": "/t"}`:            "space",
		`{` + base + `, "listen_plain": ":1883", "clients_per_amqp_connection": 0}`:    "clients_per_amqp_connection",
		`{` + base + `, "listen_plain": ":1883", "clients_per_amqp_connection": 1001}`: "clients_per_amqp_connection",
	}
	dir := t.TempDir()
	for text, field := range cases {
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(p)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: want an error naming %q, got %v", text, field, err)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.json")
	_ = os.WriteFile(p, []byte(`{"space": "s", "listen_plain": ":1883", "routers": ["h:1"], "table_file": "/t"}`), 0o600)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if *c.MaxPacketSize != 1048576 || *c.ReceiveMaximum != 32 || *c.MaxConnectionsPerUser != 100 || *c.MaxSessionExpiry != 86400 || c.LogLevel != "info" ||
		*c.ClientsPerAMQPConnection != 100 {
		t.Errorf("defaults: %d %d %d %s", *c.MaxPacketSize, *c.ReceiveMaximum, *c.MaxConnectionsPerUser, c.LogLevel)
	}
}

func TestTableExpandUsesTheTable(t *testing.T) {
	tb := &Table{Space: "s", Addresses: map[string]string{"a/b": "queue", "a/c/d": "topic", "q": "queue"},
		ReservedPrefixes: []string{"$", "_topo/"}}
	for a := range tb.Addresses {
		tb.sorted = append(tb.sorted, a)
	}
	if got := strings.Join(tb.Expand("a/+"), ","); got != "a/b" {
		t.Errorf("a/+: %s", got)
	}
	if got := len(tb.Expand("#")); got != 3 {
		t.Errorf("#: %d", got)
	}
	if tb.Address("nope") != "" || tb.Address("q") != "q" || len(tb.Expand("$SYS/#")) != 0 {
		t.Errorf("Address / reserved")
	}
}
