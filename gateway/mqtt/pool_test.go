package main

import (
	"errors"
	"testing"
)

func TestPoolReservesUpToMaxPerConnection(t *testing.T) {
	var p pool
	a, fresh := p.reserve("u", 2)
	if !fresh {
		t.Fatal("the first client of a user must dial a new connection")
	}
	b, fresh := p.reserve("u", 2)
	if fresh || b != a {
		t.Fatal("the second client must share the first connection")
	}
	c, fresh := p.reserve("u", 2)
	if !fresh || c == a {
		t.Fatal("the third client must get a new connection (max 2)")
	}
	d, fresh := p.reserve("v", 2)
	if !fresh || d == a || d == c {
		t.Fatal("another user never shares")
	}
	if n := p.Connections(); n != 3 {
		t.Fatalf("connections: %d", n)
	}
	// a failed dial leaves the pool; its waiters try again
	p.fail(c, errors.New("auth failed"))
	if p.alive(c) || p.Connections() != 2 {
		t.Fatal("a failed connection stays in the pool")
	}
	e, fresh := p.reserve("u", 2)
	if !fresh || e == a {
		t.Fatal("a full connection was handed out")
	}
}

func TestPoolOneClientPerConnectionIsTodaysBehaviour(t *testing.T) {
	var p pool
	a, f1 := p.reserve("u", 1)
	b, f2 := p.reserve("u", 1)
	if !f1 || !f2 || a == b {
		t.Fatal("clients_per_amqp_connection 1 must give every client its own connection")
	}
}
