package frames

import "testing"

// PostgreSQL's ereport builds a record's message between errstart and
// errfinish: the builders are its logger's work, the statement's own
// functions are not.
func TestPostgreSQLServerLog(t *testing.T) {
	var pg Logger
	for _, l := range NativeLoggerLibraries {
		if l.Name == "PostgreSQL server log" {
			pg = l
		}
	}
	if pg.Frames == nil {
		t.Fatal("no PostgreSQL server log family")
	}
	for _, fn := range []string{"errfinish", "EmitErrorReport", "errmsg", "errdetail", "BuildParamLogString"} {
		if !pg.Frames(fn) {
			t.Errorf("%s not counted as the server log's", fn)
		}
	}
	for _, fn := range []string{"PostgresMain", "PortalRun", "exec_execute_message", "pq_getbyte", "errmsgx"} {
		if pg.Frames(fn) {
			t.Errorf("%s wrongly counted as the server log's", fn)
		}
	}
}

// A JVM's compiler threads are JIT work; its collector and its request
// threads are not.
func TestJITFrames(t *testing.T) {
	for _, fn := range []string{"CompileBroker::compiler_thread_loop", "C2Compiler::compile_method", "Compiler::compile_method"} {
		if !JITFrames(fn) {
			t.Errorf("%s not recognised as JIT work", fn)
		}
	}
	for _, fn := range []string{"G1ConcurrentMark::mark_from_roots", "JavaThread::thread_main_inner", "java.lang.Thread.run"} {
		if JITFrames(fn) {
			t.Errorf("%s wrongly counted as JIT work", fn)
		}
	}
}
