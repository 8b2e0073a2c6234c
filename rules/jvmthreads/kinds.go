package jvmthreads

import "regexp"

// poolKinds name a thread pool's implementation from its threads' names
// (the name without its number, jfr.PoolName), and how its size is set.
var poolKinds = []struct {
	name         *regexp.Regexp
	what, resize string
}{
	{regexp.MustCompile(`^(https?|ajp)-(nio2?|apr|jsse-nio)-.*-exec$`), "Tomcat's connector executor",
		"maxThreads on the Connector in server.xml (Spring Boot: server.tomcat.threads.max, default 200)"},
	{regexp.MustCompile(`^qtp\d+$`), "Jetty's QueuedThreadPool",
		"the QueuedThreadPool's maxThreads (jetty.threadPool.maxThreads, default 200)"},
	{regexp.MustCompile(`^XNIO-\d+ task$`), "Undertow's worker pool",
		"Undertow's worker threads (Spring Boot: server.undertow.threads.worker)"},
	{regexp.MustCompile(`^((nio|epoll|kqueue|io_uring)EventLoopGroup-\d+|reactor-http-(nio|epoll)|vert\.x-eventloop-thread)$`), "a Netty event loop group",
		"the EventLoopGroup's thread count (Reactor Netty: -Dreactor.netty.ioWorkerCount); move blocking calls off the event loop"},
	{regexp.MustCompile(`^pool-\d+-thread$`), "an executor made by java.util.concurrent.Executors",
		"the thread count given to Executors.newFixedThreadPool"},
	{regexp.MustCompile(`^ForkJoinPool\.commonPool-worker$`), "the common ForkJoinPool",
		"-Djava.util.concurrent.ForkJoinPool.common.parallelism, or a pool of its own for blocking work"},
	{regexp.MustCompile(`^ForkJoinPool-\d+-worker$`), "a ForkJoinPool", "the pool's parallelism"},
}

// PoolKind says what a pool of threads named alike is and how its size is
// set; known is false for a name no implementation is known by (a
// hand-made pool), which gets generic words.
func PoolKind(pool string) (what, resize string, known bool) {
	for _, k := range poolKinds {
		if k.name.MatchString(pool) {
			return k.what, k.resize, true
		}
	}
	return "a pool of threads named alike", "the pool's thread count", false
}
