package facts

import (
	"math"
	"sort"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// TimeWaitSeconds is TCP_TIMEWAIT_LEN, compiled into the kernel.
const TimeWaitSeconds = 60

// Destination is one remote endpoint's pressure on the local ports.
type Destination struct {
	Addr       string
	TimeWait   int     // at the end of the window
	Growth     int     // TIME_WAIT growth over the window
	Recent     int     // TIME_WAIT entries closed in the last RecentSeconds
	Held       int     // sockets in any state at the end
	SynSent    int     // connects in progress at the end
	Rate       float64 // estimated new connections per second
	Ceiling    float64 // usable ports / TIME_WAIT lifetime
	Ports      int
	Pressure   float64 // max(Rate/Ceiling, Held/Ports)
	PortsTaken float64 // Held / Ports
	// Own is the most sockets to the destination the target process held
	// at either end; -1 when unknown (no target, or its descriptors unread).
	Own int
}

// TimeWait measures the pressure of every remote endpoint of the end
// snapshot on the local ports, worst first; nil without two host snapshots
// with TCP sockets and a port range.
var TimeWait = &Fact[[]Destination]{
	Name: "timewait-destinations",
	Doc:  "Every remote endpoint's pressure on the local ephemeral ports: TIME_WAIT at the end, its growth, connections closed in the last seconds (dated by their timers), the new-connection rate against the ceiling of usable ports over the TIME_WAIT lifetime, and the sockets the target held.",
	Compute: func(p *Pass) []Destination {
		d, ok := p.Evidence.SystemDelta()
		if !ok {
			return nil
		}
		return destinations(d)
	},
}

func destinations(d *evidence.SystemDelta) []Destination {
	n := d.End.Net
	if n == nil {
		return nil
	}
	ports := n.Sysctls.EphemeralPorts()
	if ports == 0 {
		return nil
	}
	ceiling := float64(ports) / TimeWaitSeconds
	// Without timers: no destination gets more new connections than the
	// whole namespace opened, so TIME_WAIT left over from an earlier burst,
	// no longer replenished, does not pass for a steady rate.
	opened := math.Inf(1)
	if v, ok := d.Counter("Tcp.ActiveOpens"); ok && d.Seconds > 0 {
		opened = float64(v) / d.Seconds
	}
	var out []Destination
	for _, r := range n.Remotes {
		start, end := d.Remote(r.Addr)
		tw := end.States["TIME_WAIT"]
		growth := tw - start.States["TIME_WAIT"]
		var rate float64
		if n.TimeWaitAges {
			// Connections closed in the last seconds of the window, dated
			// by their TIME_WAIT timers: the current rate, whatever an
			// earlier burst left behind.
			rate = float64(end.RecentTimeWait) / bundle.RecentSeconds
		} else {
			rate = float64(tw) / TimeWaitSeconds
			if d.Seconds > 0 {
				rate = math.Max(rate, float64(growth)/d.Seconds)
			}
			rate = math.Min(rate, opened)
		}
		dst := Destination{Addr: r.Addr, TimeWait: tw, Growth: growth, Recent: end.RecentTimeWait, Held: r.Total, SynSent: end.States["SYN_SENT"],
			Rate: rate, Ceiling: ceiling, Ports: ports, PortsTaken: float64(r.Total) / float64(ports)}
		dst.Pressure = math.Max(rate/ceiling, dst.PortsTaken)
		dst.Own = -1
		if n.ProcessSockets && (d.Start.Net == nil || d.Start.Net.ProcessSockets) {
			dst.Own = max(start.Process, end.Process)
		}
		out = append(out, dst)
	}
	// Remotes come sorted by sockets held; the rule wants pressure.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pressure > out[j].Pressure })
	return out
}
