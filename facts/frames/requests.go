package frames

import "github.com/perfdoctor/perfdoctor/evidence"

// Client calls to another service: waiting inside one of them is waiting
// for a downstream (an HTTP backend, a database, a cache, an RPC peer).
var DownstreamClient = evidence.FuncPrefix(
	"net/http.(*persistConn).roundTrip", "net/http.(*Transport).roundTrip", "net/http.(*Client).do",
	"database/sql.", "google.golang.org/grpc.(*ClientConn).Invoke", "google.golang.org/grpc.invoke",
	"google.golang.org/grpc.(*clientStream).", "github.com/redis/go-redis/", "github.com/go-redis/redis/",
	"github.com/gomodule/redigo/", "github.com/jackc/pgx/", "github.com/lib/pq.", "github.com/go-sql-driver/mysql.",
	"go.mongodb.org/mongo-driver/", "go.etcd.io/etcd/client/", "github.com/bradfitz/gomemcache/",
)

// InHandler is a goroutine running a request's handler (not a connection
// idle between requests): net/http's handler call, gRPC's method call,
// fasthttp's connection loop.
var InHandler = evidence.FuncPrefix("net/http.serverHandler.ServeHTTP", "google.golang.org/grpc.(*Server).processUnaryRPC",
	"google.golang.org/grpc.(*Server).processStreamingRPC", "github.com/valyala/fasthttp.(*Server).serveConn")
