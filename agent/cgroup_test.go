package agent

import (
	"path/filepath"
	"testing"
)

func fixture(name string) cgroupFiles {
	return cgroupFiles{procCgroup: filepath.Join("testdata", name, "proc", "cgroup"), mount: filepath.Join("testdata", name, "sys")}
}

func TestReadLimitsFixtures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		cpu     float64
		cpuFrom string
		leaf    float64
		mem     uint64
		memFrom string
		levels  int
	}{
		// v2: the pod (1.5 cores) is tighter than the slice (2) and the
		// container (none); the slice's 1 GiB is tighter than the container's 2 GiB.
		{"v2", 2, 1.5, "/kubepods.slice/pod1", 0, 1 << 30, "/kubepods.slice", 4},
		{"v2-leaf", 2, 4, "/app", 4, 512 << 20, "/app", 2},
		// No cgroup namespace: the host path does not exist under the mount,
		// whose root is the container's own cgroup.
		{"v2-hostpath", 2, 0.5, "/", 0.5, 256 << 20, "/", 1},
		{"v2-none", 2, 0, "", 0, 0, "", 2},
		// v1: cpu and memory hierarchies walked separately; the parent
		// "docker" cgroup holds both limits, the leaf and root none.
		{"v1", 1, 0.5, "/docker", 0, 768 << 20, "/docker", 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := readLimits(fixture(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if l.Version != tc.version || l.CPUCores != tc.cpu || l.CPUFrom != tc.cpuFrom || l.MemoryBytes != tc.mem || l.MemoryFrom != tc.memFrom {
				t.Errorf("got v%d cpu %v from %q mem %d from %q; want v%d cpu %v from %q mem %d from %q",
					l.Version, l.CPUCores, l.CPUFrom, l.MemoryBytes, l.MemoryFrom, tc.version, tc.cpu, tc.cpuFrom, tc.mem, tc.memFrom)
			}
			if got := l.leafCPUCores(); got != tc.leaf {
				t.Errorf("leaf cores %v, want %v", got, tc.leaf)
			}
			if len(l.Levels) != tc.levels {
				t.Errorf("%d levels, want %d: %+v", len(l.Levels), tc.levels, l.Levels)
			}
		})
	}
}

func TestReadLimitsNoCgroup(t *testing.T) {
	if _, err := readLimits(cgroupFiles{procCgroup: "testdata/absent", mount: "testdata/absent"}); err != errNoCgroup {
		t.Fatalf("err = %v, want errNoCgroup", err)
	}
}

func TestRecommendProcs(t *testing.T) {
	for c, want := range map[float64]int{0.5: 2, 1.5: 2, 2: 2, 2.01: 3, 7.9: 8} {
		if got := recommendProcs(c, 64); got != want {
			t.Errorf("recommendProcs(%v) = %d, want %d", c, got, want)
		}
	}
	if got := recommendProcs(16, 4); got != 4 {
		t.Errorf("recommendProcs capped by CPU count = %d, want 4", got)
	}
	if got := recommendProcs(0, 8); got != 8 {
		t.Errorf("no limit = %d, want 8", got)
	}
}
