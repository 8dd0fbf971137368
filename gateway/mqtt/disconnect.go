package main

// mochi 2.7.9 reads a DISCONNECT's reason code only when more than the code
// follows (packets.DisconnectDecode: Remaining > 1). MQTT 5 (3.14.2.1)
// allows a DISCONNECT of remaining length 1, the reason code alone: the
// shortest "Disconnect with Will Message" (0x04), the form paho and most
// clients send, reached the hooks as 0x00 (normal: no will). The listeners
// hand mochi connections that remember the last bytes the client sent; a
// DISCONNECT is the last packet of a connection, so a v5 DISCONNECT of
// remaining length 1 is the three bytes E0 01 <code> at that tail.
// Remove when mochi decodes it (then Remaining == 1 never reaches here
// with the code lost).

import (
	"net"
	"sync"
)

// tailConn is a client connection that keeps the last 3 bytes read.
type tailConn struct {
	net.Conn
	mu   sync.Mutex
	tail [3]byte
	n    int // bytes read so far, up to 3
}

func (c *tailConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		for _, x := range p[max(0, n-3):n] {
			c.tail[0], c.tail[1], c.tail[2] = c.tail[1], c.tail[2], x
			if c.n < 3 {
				c.n++
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

// tailListener accepts tailConns (outside TLS: the decrypted bytes).
type tailListener struct{ net.Listener }

func (l tailListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tailConn{Conn: c}, nil
}

// shortDisconnectReason: the reason code of a DISCONNECT of remaining
// length 1 that was the last packet read from conn.
func shortDisconnectReason(conn net.Conn) (byte, bool) {
	c, ok := conn.(*tailConn)
	if !ok {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 3 && c.tail[0] == 0xE0 && c.tail[1] == 0x01 {
		return c.tail[2], true
	}
	return 0, false
}
