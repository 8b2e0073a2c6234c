package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/fleettest"
)

// sharedPG is one throwaway PostgreSQL cluster for the package's tests:
// TestFleetEndToEnd's history store (a database of its own per run) and
// TestProcessTreePostgres's pgbench each started one, and initdb with the
// server's start took 5 to 10 s of each on 2 cores. The fleet test starts
// it while its services warm up, before it measures anything.
var sharedPG struct {
	launched atomic.Bool // a test asked for the cluster
	once     sync.Once
	srv      *fleettest.PostgresServer
	err      error

	mu        sync.Mutex
	databases int
}

// launchSharedPostgres starts the shared cluster, or waits for the start
// under way; the package's TestMain stops it.
func launchSharedPostgres() {
	sharedPG.launched.Store(true)
	sharedPG.once.Do(func() {
		sharedPG.srv, sharedPG.err = fleettest.LaunchPostgres(true)
	})
}

// stopSharedPostgres stops the shared cluster, waiting for a start under
// way (begun by a test that ended sooner); where no test asked for it (a
// -run or -short that skips them), there is none to start or stop.
func stopSharedPostgres() {
	if !sharedPG.launched.Load() {
		return
	}
	sharedPG.once.Do(func() {}) // returns once a start under way has ended
	if sharedPG.srv != nil {
		sharedPG.srv.Stop()
	}
}

// sharedPostgres is the shared cluster, listening on a loopback port as
// well as its unix socket; missing PostgreSQL skips the test (fails it
// under CI) as fleettest.StartPostgres does.
func sharedPostgres(t *testing.T) *fleettest.PostgresServer {
	t.Helper()
	launchSharedPostgres()
	if errors.Is(sharedPG.err, fleettest.ErrNoPostgres) {
		fleettest.Missing(t, "PostgreSQL's initdb and postgres", "postgresql")
	}
	if sharedPG.err != nil {
		t.Fatal(sharedPG.err)
	}
	return sharedPG.srv
}

// postgresDatabase is a new, empty database in the shared cluster, for a
// test that must find nothing recorded before it.
func postgresDatabase(t *testing.T) string {
	t.Helper()
	srv := sharedPostgres(t)
	sharedPG.mu.Lock()
	sharedPG.databases++
	name := fmt.Sprintf("test%d", sharedPG.databases)
	sharedPG.mu.Unlock()
	dsn, err := srv.NewDatabase(name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
