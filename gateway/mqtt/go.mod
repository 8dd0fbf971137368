module github.com/enmasse-messaging/gateway/mqtt

go 1.25

require (
	github.com/Azure/go-amqp v1.7.0
	github.com/mochi-mqtt/server/v2 v2.7.9
)

require (
	github.com/gorilla/websocket v1.5.0 // indirect
	github.com/rs/xid v1.4.0 // indirect
)
