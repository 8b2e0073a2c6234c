//go:build !linux

package load

import "context"

// eventLoopFor: the event loop is Linux only; elsewhere every loop runs on
// goroutines.
func eventLoopFor(*target) bool { return false }

func runEventLoop(context.Context, Config, *target, []byte, []*worker, *counters) {}
