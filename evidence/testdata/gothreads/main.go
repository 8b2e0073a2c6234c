// Command gothreads writes Go's threadcreate profile in both its forms,
// profile.proto (debug=0) and the legacy text (debug=1), after twelve
// goroutines each locked an OS thread of their own.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

func hold(wg *sync.WaitGroup, stop chan struct{}) {
	defer wg.Done()
	runtime.LockOSThread()
	<-stop
}

func write(path string, debug int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("threadcreate").WriteTo(f, debug); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func main() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go hold(&wg, stop)
	}
	time.Sleep(100 * time.Millisecond)
	for path, debug := range map[string]int{"threadcreate.pb.gz": 0, "threadcreate.txt": 1} {
		if err := write(path, debug); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	close(stop)
	wg.Wait()
}
