// Package srcline finds the source file and line of code addresses in ELF
// objects through their DWARF line tables, as addr2line does: the line
// table row at or before the address, in the sequence that holds it. The
// table is the object's own (.debug_line) or that of its separate debug
// file, found as gdb and perf find it: by build ID under
// /usr/lib/debug/.build-id/, or by the .gnu_debuglink name beside the
// object, in its .debug directory or under /usr/lib/debug.
//
// It replaces `perf script -F srcline`, which asks an addr2line process
// for every frame and is slow on large objects. Objects are read once and
// kept; an object without line tables (a stripped binary whose debug file
// is not installed) is read once, found to have none, and costs nothing
// after. Every failure, a malformed object included, is "no line": a
// lookup never returns an error.
package srcline

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zlib"
)

// DebugDir is where distributions install separate debug files
// (Debian's -dbg and -dbgsym packages).
const DebugDir = "/usr/lib/debug"

// MaxDebugBytes bounds the DWARF sections read from one object (those
// that line tables and unit ranges need, counted as stored, compressed or
// not): past it the object gets no lines rather than the memory to read
// them, as perfdoctor runs beside the service it observes. The debug file
// of Debian's libc holds 3.3 MB of them, a Go service of 45 MB 6.6 MB.
const MaxDebugBytes = 256 << 20

// Resolver resolves addresses of the ELF objects it is given by path. It
// keeps every object it reads; it is not safe for concurrent use.
type Resolver struct {
	// DebugDir replaces DebugDir (tests); "" means DebugDir.
	DebugDir string
	// Open opens an object's file; nil means os.Open. A caller that knows
	// the process may open through /proc/PID/root, so the object read is
	// the one mapped in the process's mount namespace.
	Open func(path string) (*os.File, error)
	objs map[string]*object
}

// Line is one resolved address: the source file (its full path, as the
// line table spells it) and the line, 1 or more.
type Line struct {
	File string
	Line int
}

// Lookup returns the source line of the instruction at file offset off of
// the ELF object at path (the address perf script prints for a user-space
// frame, "binary offset"), and whether there is one. A call to Err after
// it says why an object had none.
func (r *Resolver) Lookup(path string, off uint64) (Line, bool) {
	o := r.object(path)
	if o.err != nil {
		return Line{}, false
	}
	return o.lookup(off)
}

// Err is why the object at path gave no lines, once Lookup was asked about
// it: nil while it has line tables.
func (r *Resolver) Err(path string) error {
	if o := r.objs[path]; o != nil {
		return o.err
	}
	return nil
}

func (r *Resolver) object(path string) *object {
	if o := r.objs[path]; o != nil {
		return o
	}
	if r.objs == nil {
		r.objs = map[string]*object{}
	}
	o, err := r.load(path)
	if err != nil {
		o = &object{err: err}
	}
	r.objs[path] = o
	return o
}

// ErrNoLines means the object and its debug files, if any, have no DWARF
// line tables.
var ErrNoLines = errors.New("no DWARF line tables")

// load reads the object at path and finds its line tables. A malformed
// object that makes debug/elf or debug/dwarf panic is an error like any
// other.
func (r *Resolver) load(path string) (o *object, err error) {
	defer func() {
		if p := recover(); p != nil {
			o, err = nil, fmt.Errorf("%s: reading it panicked: %v", path, p)
		}
	}()
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("%s: not a file", path)
	}
	open := r.Open
	if open == nil {
		open = os.Open
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	o = &object{}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Filesz > 0 {
			o.loads = append(o.loads, segment{off: p.Off, size: p.Filesz, vaddr: p.Vaddr})
		}
	}
	if len(o.loads) == 0 {
		return nil, fmt.Errorf("%s: no loadable segments", path)
	}
	dwarfFile, dwarfReader := ef, io.ReaderAt(f)
	if !hasLines(ef) {
		df, dr, err := r.debugFile(path, ef)
		if err != nil {
			return nil, err
		}
		defer dr.Close()
		dwarfFile, dwarfReader = df, dr
	}
	d, err := lineDWARF(dwarfReader, dwarfFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := o.index(d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

// sectionData is the section's contents, inflated when compressed with
// zlib (SHF_COMPRESSED, as gcc -gz, Debian's debug packages and the Go
// linker write them) by klauspost's zlib, about twice the standard
// library's speed; other sections are read by debug/elf. r is the file f
// was read from.
func sectionData(r io.ReaderAt, f *elf.File, s *elf.Section) ([]byte, error) {
	if s.Flags&elf.SHF_COMPRESSED == 0 || s.FileSize > MaxDebugBytes {
		return s.Data()
	}
	// Read as it comes, not allocated from the header's size: a corrupt
	// size past the file's end stops at the end.
	raw, err := io.ReadAll(io.NewSectionReader(r, int64(s.Offset), int64(s.FileSize)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if uint64(len(raw)) != s.FileSize {
		return nil, fmt.Errorf("%s: %d bytes past the end of the file", s.Name, s.FileSize-uint64(len(raw)))
	}
	typ, size, hdr, ok := compressionHeader(raw, f.Class, f.ByteOrder)
	if !ok || typ != elf.COMPRESS_ZLIB {
		return s.Data()
	}
	// Deflate expands at most 1032 times: a larger size is a corrupt header.
	if size > maxInflated || size > 1032*uint64(len(raw)) {
		return nil, fmt.Errorf("%s: inflates to %d bytes from %d", s.Name, size, len(raw))
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[hdr:]))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	// Room for the header's size up to 64 MiB; more only as it inflates.
	out := bytes.NewBuffer(make([]byte, 0, min(size, 64<<20)))
	n, err := io.Copy(out, io.LimitReader(zr, int64(size)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Name, err)
	}
	if uint64(n) != size {
		return nil, fmt.Errorf("%s: inflated %d of %d bytes", s.Name, n, size)
	}
	return out.Bytes(), nil
}

// maxInflated bounds one section's size once inflated.
const maxInflated = 1 << 30

// compressionHeader reads the Chdr at the start of a compressed section:
// the compression, the inflated size and the header's length.
func compressionHeader(b []byte, class elf.Class, bo binary.ByteOrder) (elf.CompressionType, uint64, int, bool) {
	switch class {
	case elf.ELFCLASS64:
		if len(b) < 24 {
			return 0, 0, 0, false
		}
		return elf.CompressionType(bo.Uint32(b)), bo.Uint64(b[8:]), 24, true
	case elf.ELFCLASS32:
		if len(b) < 12 {
			return 0, 0, 0, false
		}
		return elf.CompressionType(bo.Uint32(b)), uint64(bo.Uint32(b[4:])), 12, true
	}
	return 0, 0, 0, false
}

// hasLines reports whether the file carries a DWARF line table and the
// compilation units that point into it.
func hasLines(f *elf.File) bool {
	has := func(name string) bool {
		s := f.Section(".debug_" + name)
		return s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0
	}
	return has("line") && has("info")
}

// lineSections are the DWARF sections that line tables and the units'
// address ranges are read from; the largest others (location lists, call
// frames) are never read.
var lineSections = []string{"abbrev", "info", "line", "str", "ranges", "addr", "line_str", "rnglists", "str_offsets"}

// lineDWARF reads the file's lineSections into a dwarf.Data (f read from
// r). Only linked
// objects (executables, shared libraries, their debug files) are read:
// their DWARF needs no relocation.
func lineDWARF(r io.ReaderAt, f *elf.File) (*dwarf.Data, error) {
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("ELF type %s: not a linked object", f.Type)
	}
	var stored uint64
	for _, name := range lineSections {
		if s := f.Section(".debug_" + name); s != nil && s.Type != elf.SHT_NOBITS {
			stored += s.FileSize
		}
	}
	if stored > MaxDebugBytes {
		return nil, fmt.Errorf("%d bytes of DWARF, over %d", stored, MaxDebugBytes)
	}
	// The sections are read side by side: inflating them is nearly all
	// the time an object takes (a 45 MB Go binary's 6.6 MB).
	dat := make([][]byte, len(lineSections))
	errs := make([]error, len(lineSections))
	var wg sync.WaitGroup
	for i, name := range lineSections {
		s := f.Section(".debug_" + name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("%s: reading it panicked: %v", s.Name, p)
				}
			}()
			dat[i], errs[i] = sectionData(r, f, s)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	section := func(name string) []byte { return dat[slices.Index(lineSections, name)] }
	d, err := dwarf.New(section("abbrev"), nil, nil, section("info"), section("line"), nil, section("ranges"), section("str"))
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"addr", "line_str", "rnglists", "str_offsets"} {
		if b := section(name); b != nil {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// debugFile finds and opens the separate debug file of the object at path
// (ef): by build ID, then by debug link. A candidate is taken only when it
// is that object's: the same build ID, or, without one, the CRC the debug
// link records.
func (r *Resolver) debugFile(path string, ef *elf.File) (*elf.File, *os.File, error) {
	dir := r.DebugDir
	if dir == "" {
		dir = DebugDir
	}
	id := BuildID(ef)
	var candidates []string
	if len(id) >= 2 {
		h := hex.EncodeToString(id)
		candidates = append(candidates, filepath.Join(dir, ".build-id", h[:2], h[2:]+".debug"))
	}
	link, crc, hasLink := DebugLink(ef)
	if hasLink {
		d := filepath.Dir(path)
		candidates = append(candidates, filepath.Join(d, link), filepath.Join(d, ".debug", link), filepath.Join(dir, d, link))
	}
	for _, c := range candidates {
		if c == path {
			continue
		}
		f, err := os.Open(c)
		if err != nil {
			continue
		}
		df, err := elf.NewFile(f)
		if err != nil || !hasLines(df) {
			f.Close()
			continue
		}
		switch cid := BuildID(df); {
		case len(id) > 0 && len(cid) > 0:
			if !bytes.Equal(id, cid) {
				f.Close()
				continue
			}
		case hasLink:
			if sum, err := fileCRC(f); err != nil || sum != crc {
				f.Close()
				continue
			}
		default:
			f.Close()
			continue
		}
		return df, f, nil
	}
	return nil, nil, ErrNoLines
}

// fileCRC is the CRC-32 that .gnu_debuglink records for a debug file.
func fileCRC(f *os.File) (uint32, error) {
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// BuildID is the object's GNU build ID (the NT_GNU_BUILD_ID note), or nil.
func BuildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := noteBuildID(data, f.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

// noteBuildID reads ELF notes (namesz, descsz, type, name, desc, each
// 4-byte aligned) and returns the description of the first GNU build-ID
// note.
func noteBuildID(data []byte, bo interface{ Uint32([]byte) uint32 }) []byte {
	const ntGNUBuildID = 3
	for len(data) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(data)), uint64(bo.Uint32(data[4:])), bo.Uint32(data[8:])
		data = data[12:]
		nameEnd := align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if nameEnd > uint64(len(data)) || descEnd > uint64(len(data)) || descEnd < nameEnd {
			return nil
		}
		name := data[:namesz]
		if typ == ntGNUBuildID && string(bytes.TrimRight(name, "\x00")) == "GNU" && descsz > 0 {
			return slices.Clone(data[nameEnd : nameEnd+descsz])
		}
		data = data[descEnd:]
	}
	return nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// DebugLink is the object's .gnu_debuglink: the debug file's name and the
// CRC-32 of its contents.
func DebugLink(f *elf.File) (name string, crc uint32, ok bool) {
	s := f.Section(".gnu_debuglink")
	if s == nil {
		return "", 0, false
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	return parseDebugLink(data, f.ByteOrder)
}

// parseDebugLink reads a .gnu_debuglink section: a NUL-terminated file
// name (no directory), padding to 4 bytes, and the 4-byte CRC.
func parseDebugLink(data []byte, bo interface{ Uint32([]byte) uint32 }) (string, uint32, bool) {
	n := bytes.IndexByte(data, 0)
	if n <= 0 {
		return "", 0, false
	}
	name := string(data[:n])
	at := align4(uint64(n) + 1)
	if at+4 > uint64(len(data)) || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return "", 0, false
	}
	return name, bo.Uint32(data[at:]), true
}

// segment is a PT_LOAD: file bytes [off, off+size) load at vaddr.
type segment struct{ off, size, vaddr uint64 }

// object is one ELF object's line tables, read lazily by compilation unit.
type object struct {
	err   error
	loads []segment
	d     *dwarf.Data
	units []unitRange // sorted by lo
	cus   []*dwarf.Entry
	lines map[int]*table // by index into cus
	found map[uint64]foundLine
}

type foundLine struct {
	line Line
	ok   bool
}

type unitRange struct {
	lo, hi uint64
	cu     int
}

// index lists the compilation units and the address ranges they cover.
func (o *object) index(d *dwarf.Data) error {
	o.d = d
	o.lines = map[int]*table{}
	o.found = map[uint64]foundLine{}
	rd := d.Reader()
	for {
		e, err := rd.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			ranges, err := d.Ranges(e)
			if err == nil && len(ranges) > 0 {
				cu := len(o.cus)
				o.cus = append(o.cus, e)
				for _, r := range ranges {
					if r[0] < r[1] {
						o.units = append(o.units, unitRange{r[0], r[1], cu})
					}
				}
			}
		}
		rd.SkipChildren()
	}
	if len(o.units) == 0 {
		return ErrNoLines
	}
	sort.Slice(o.units, func(i, j int) bool { return o.units[i].lo < o.units[j].lo })
	return nil
}

// vaddr is the virtual address (as the DWARF sees it) of file offset off.
func (o *object) vaddr(off uint64) (uint64, bool) {
	for _, s := range o.loads {
		if off >= s.off && off-s.off < s.size {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

func (o *object) lookup(off uint64) (Line, bool) {
	if f, seen := o.found[off]; seen {
		return f.line, f.ok
	}
	l, ok := o.resolve(off)
	o.found[off] = foundLine{l, ok}
	return l, ok
}

func (o *object) resolve(off uint64) (l Line, ok bool) {
	defer func() {
		if recover() != nil {
			l, ok = Line{}, false
		}
	}()
	pc, ok := o.vaddr(off)
	if !ok {
		return Line{}, false
	}
	// The units whose range holds pc: the last ones starting at or before it.
	i := sort.Search(len(o.units), func(i int) bool { return o.units[i].lo > pc })
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		u := o.units[j]
		if pc >= u.hi {
			continue
		}
		if l, ok := o.table(u.cu).find(pc); ok {
			return l, true
		}
	}
	return Line{}, false
}

func (o *object) table(cu int) *table {
	if t := o.lines[cu]; t != nil {
		return t
	}
	t := readTable(o.d, o.cus[cu])
	o.lines[cu] = t
	return t
}

// table is one compilation unit's line table: its sequences sorted by
// address, each ending with an end row.
type table struct {
	rows  []row
	files []string
}

type row struct {
	addr uint64
	file int32 // index into files; -1 ends a sequence
	line int32
}

// readTable decodes a unit's line program; a malformed one keeps the
// sequences read before the fault.
func readTable(d *dwarf.Data, cu *dwarf.Entry) *table {
	t := &table{}
	lr, err := d.LineReader(cu)
	if err != nil || lr == nil {
		return t
	}
	fileIndex := map[*dwarf.LineFile]int32{}
	type sequence struct{ rows []row }
	var seqs []sequence
	var cur []row
	var e dwarf.LineEntry
	for {
		if err := lr.Next(&e); err != nil {
			break
		}
		if e.EndSequence {
			if len(cur) > 0 {
				cur = append(cur, row{addr: e.Address, file: -1})
				seqs = append(seqs, sequence{cur})
			}
			cur = nil
			continue
		}
		fi := int32(-1)
		if e.File != nil {
			var seen bool
			if fi, seen = fileIndex[e.File]; !seen {
				fi = int32(len(t.files))
				fileIndex[e.File] = fi
				t.files = append(t.files, e.File.Name)
			}
		}
		cur = append(cur, row{addr: e.Address, file: fi, line: int32(min(e.Line, 1<<31-1))})
	}
	// A sequence at address 0 is code the linker dropped (its tombstone).
	seqs = slices.DeleteFunc(seqs, func(s sequence) bool { return s.rows[0].addr == 0 })
	sort.SliceStable(seqs, func(i, j int) bool { return seqs[i].rows[0].addr < seqs[j].rows[0].addr })
	var end uint64
	for _, s := range seqs {
		if s.rows[0].addr < end {
			continue // overlaps the one before: keep the first
		}
		t.rows = append(t.rows, s.rows...)
		end = s.rows[len(s.rows)-1].addr
	}
	return t
}

// find returns the line of pc: the last row at or before it, unless that
// row ends its sequence (pc lies between sequences).
func (t *table) find(pc uint64) (Line, bool) {
	i := sort.Search(len(t.rows), func(i int) bool { return t.rows[i].addr > pc }) - 1
	if i < 0 {
		return Line{}, false
	}
	r := t.rows[i]
	if r.file < 0 || r.line <= 0 {
		return Line{}, false
	}
	return Line{File: t.files[r.file], Line: int(r.line)}, true
}
