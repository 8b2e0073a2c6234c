package frames

import "github.com/perfdoctor/perfdoctor/evidence"

// Pool is a bounded resource of a Go library that a request waits for
// before it makes its call: a connection pool, a per-host connection limit,
// a semaphore. Waiting in Acquire is queueing for a slot, not the call
// itself: a rule that reads time inside client calls as the downstream's
// must leave it to the pool.
type Pool struct {
	// Name is the pool as a person knows it.
	Name string
	// Size is how a program sets its size.
	Size string
	// Acquire matches the frames a goroutine waits in for a slot.
	Acquire evidence.Matcher
	// Held matches the frames of a goroutine using a slot: the call made
	// with it (a goroutine waiting in Acquire is not holding one).
	Held evidence.Matcher
}

// Pools are the Go libraries' bounded pools, by where a request waits for
// a slot.
var Pools = []Pool{
	{
		Name:    "database/sql's connection pool",
		Size:    "db.SetMaxOpenConns(n)",
		Acquire: exact("database/sql.(*DB).conn"),
		Held: evidence.FuncPrefix("database/sql.(*DB).queryDC", "database/sql.(*DB).execDC", "database/sql.(*DB).prepareDC",
			"database/sql.(*Stmt).", "database/sql.(*Tx).", "database/sql.(*Conn).", "database/sql.(*Rows).", "database/sql.(*Row).",
			"database/sql.ctxDriver", "database/sql.withLock"),
	},
	{
		Name:    "net/http's connections per host (Transport.MaxConnsPerHost)",
		Size:    "http.Transport{MaxConnsPerHost: n}",
		Acquire: exact("net/http.(*Transport).getConn"),
		Held:    evidence.FuncPrefix("net/http.(*persistConn).roundTrip"),
	},
	{
		Name:    "pgxpool's connection pool",
		Size:    "pgxpool.Config.MaxConns (pool_max_conns in the connection string)",
		Acquire: evidence.FuncPrefix("github.com/jackc/puddle/v2.(*Pool).Acquire", "github.com/jackc/puddle/v2.(*Pool).acquire"),
		Held:    evidence.FuncPrefix("github.com/jackc/pgx/v5/pgxpool.(*Conn)."),
	},
	{
		Name: "go-redis's connection pool",
		Size: "redis.Options.PoolSize",
		Acquire: evidence.FuncPrefix("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).waitTurn",
			"github.com/go-redis/redis/v8/internal/pool.(*ConnPool).waitTurn"),
		Held: evidence.FuncPrefix("github.com/redis/go-redis/v9.(*baseClient).withConn", "github.com/go-redis/redis/v8.(*baseClient).withConn"),
	},
	{
		Name:    "a weighted semaphore (golang.org/x/sync/semaphore)",
		Size:    "semaphore.NewWeighted(n)",
		Acquire: evidence.FuncPrefix("golang.org/x/sync/semaphore.(*Weighted).Acquire"),
	},
	{
		Name:    "an errgroup's limit",
		Size:    "g.SetLimit(n)",
		Acquire: evidence.FuncPrefix("golang.org/x/sync/errgroup.(*Group).Go"),
	},
}

// PoolAcquire matches the frames a goroutine waits in for any of Pools'
// slots.
var PoolAcquire = func() evidence.Matcher {
	ms := make([]evidence.Matcher, len(Pools))
	for i, p := range Pools {
		ms[i] = p.Acquire
	}
	return evidence.Any(ms...)
}()

// CallGoroutines are the go statements a client library runs on its
// caller's behalf for each call (database/sql watches a query's or a
// transaction's context in a goroutine of its own). They come and go with
// the calls: their churn is the calls' cost, not goroutines the service
// starts and could bound.
var CallGoroutines = evidence.FuncPrefix(
	"database/sql.(*Rows).initContextClose", "database/sql.(*DB).beginDC",
)
