package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Table is the JSON that plugins/module_utils/mqtt/mapping.py's
// gateway_table() writes: the addresses MQTT can name (a topic is the
// address of the same name) and the reserved prefixes. The gateway applies
// it and does not re-implement the naming rules.
type Table struct {
	Space            string            `json:"space"`
	Addresses        map[string]string `json:"addresses"`
	ReservedPrefixes []string          `json:"reserved_prefixes"`
	// the addresses whose AMQP messages marked retained the gateway stores
	// (mapping.py retain_from_amqp_addresses: multicast and topic; observer.go)
	RetainFromAMQP []string `json:"retain_from_amqp"`
	sorted         []string
}

// LoadTable reads the table file; space must be the configured space.
func LoadTable(path, space string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("table_file: %v", err)
	}
	var t Table
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("table_file %s: %v", path, err)
	}
	if t.Space != space {
		return nil, fmt.Errorf("table_file %s: space %q is not the configured space %q", path, t.Space, space)
	}
	if t.Addresses == nil {
		return nil, fmt.Errorf("table_file %s: addresses: is required", path)
	}
	for a := range t.Addresses {
		t.sorted = append(t.sorted, a)
	}
	sort.Strings(t.sorted)
	return &t, nil
}

func (t *Table) reserved(s string) bool {
	for _, p := range t.ReservedPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Address of a topic to publish to, or "" when the topic names no address.
func (t *Table) Address(topic string) string {
	if t.reserved(topic) {
		return ""
	}
	if _, ok := t.Addresses[topic]; !ok {
		return ""
	}
	return topic
}

// Expand returns the addresses a filter subscribes to, sorted; matching is
// mochi's own topic index (the MQTT library's wildcard rules).
func (t *Table) Expand(filter string) []string {
	if t.reserved(filter) || !mqtt.IsValidFilter(filter, false) {
		return nil
	}
	idx := mqtt.NewTopicsIndex()
	idx.Subscribe("f", packets.Subscription{Filter: filter})
	var out []string
	for _, a := range t.sorted {
		if t.reserved(a) {
			continue
		}
		if len(idx.Subscribers(a).Subscriptions) > 0 {
			out = append(out, a)
		}
	}
	return out
}
