package main

import (
	"testing"

	"github.com/Azure/go-amqp"
	"github.com/mochi-mqtt/server/v2/packets"
)

func TestOnlyTheMarkedMessagesOfAMQPClientsAreStored(t *testing.T) {
	marked := amqp.NewMessage([]byte("v"))
	marked.Annotations = amqp.Annotations{annotationRetain: true}
	plain := amqp.NewMessage([]byte("v"))
	falseFlag := amqp.NewMessage([]byte("v"))
	falseFlag.Annotations = amqp.Annotations{annotationRetain: false}
	notBool := amqp.NewMessage([]byte("v"))
	notBool.Annotations = amqp.Annotations{annotationRetain: "true"}
	for name, c := range map[string]struct {
		m    *amqp.Message
		want bool
	}{
		"marked": {marked, true}, "no annotation": {plain, false}, "false": {falseFlag, false},
		"not a boolean": {notBool, false},
		// what a gateway sent after storing it itself
		"stored by a gateway":      {newMessage("t/a", []byte("v"), 1, true), false},
		"a gateway's live message": {newMessage("t/a", []byte("v"), 1, false), false},
	} {
		if got := fromAMQPRetained(c.m); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

func TestARetainedWillTheStoreRefusedIsLeftToTheObservers(t *testing.T) {
	w := &will{address: "t/a", pk: packets.Packet{FixedHeader: packets.FixedHeader{Qos: 1, Retain: true},
		Payload: []byte("gone")}}
	if fromAMQPRetained(willMessage(w)) {
		t.Fatal("a stored will would be stored again")
	}
	w.notStored = true
	if !fromAMQPRetained(willMessage(w)) {
		t.Fatal("a will the store refused is not left to the observers")
	}
}

func TestTheTableListsTheAddressesToObserve(t *testing.T) {
	path := writeFile(t, "table.json", `{"space": "s", "addresses": {"t/a": "topic", "q": "queue"}, "reserved_prefixes": ["$"],
		"retain_from_amqp": ["t/a"]}`, 0o600)
	tb, err := LoadTable(path, "s")
	if err != nil || len(tb.RetainFromAMQP) != 1 || tb.RetainFromAMQP[0] != "t/a" {
		t.Fatalf("%v %v", tb, err)
	}
}
