package frames

import "testing"

func TestGCFramesAcrossGoVersions(t *testing.T) {
	// Go 1.26's collector marks through scanSpan/scanObject; older ones scanobject.
	for _, fn := range []string{"runtime.scanSpan", "runtime.scanObject", "runtime.scanobject", "runtime.gcBgMarkWorker.func2", "runtime.gcAssistAlloc1", "runtime.bgsweep"} {
		if !GCFrames(fn) {
			t.Errorf("%s not recognised as GC work", fn)
		}
	}
	for _, fn := range []string{"runtime.mallocgc", "main.gcHandler", "runtime.schedule"} {
		if GCFrames(fn) {
			t.Errorf("%s wrongly counted as GC work", fn)
		}
	}
}

func TestWriteBarrierFrames(t *testing.T) {
	// Go 1.19 calls gcWriteBarrier, Go 1.21 and later gcWriteBarrier1 to 8;
	// typed copies go through bulkBarrierPreWrite.
	for _, fn := range []string{"runtime.gcWriteBarrier", "runtime.gcWriteBarrier2", "runtime.bulkBarrierPreWrite", "runtime.(*wbBuf).putFast"} {
		if !WriteBarrierFrames(fn) {
			t.Errorf("%s not recognised as a write barrier", fn)
		}
	}
	for _, fn := range []string{"runtime.wbBufFlush", "runtime.typedmemmove", "runtime.memmove"} {
		if WriteBarrierFrames(fn) {
			t.Errorf("%s wrongly counted as a write barrier", fn)
		}
	}
}
