// Command redone is a small HTTP service that redoes work per request, in
// three shapes, each with its fixed twin that does the work once:
//
//	template-bad   parses its page template for every request
//	template-fixed parses it once, at start-up
//	kdf-bad        verifies the same basic-auth credentials with PBKDF2
//	               (golang.org/x/crypto/pbkdf2, 100,000 iterations) for
//	               every request
//	kdf-fixed      remembers verified credentials, keyed by an HMAC of them
//	regexp-bad     compiles its validation pattern for every request
//	regexp-fixed   compiles it once, at start-up
//	store-bad      checks every write against the whole in-memory store:
//	               gathers all groups, sorts them and checks each series'
//	               type against every other group's
//	store-fixed    keeps a type per series name up to date and checks the
//	               written group against it
//
// Usage: redone VARIANT. It listens on 127.0.0.1 (a free port), prints
// "listening PORT" and serves /work and net/http/pprof until killed.
package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"html/template"
	"io"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/pbkdf2"
)

const pageSource = `<!doctype html>
<html><head><title>{{.Title}}</title></head>
<body>
<h1>{{.Title}}</h1>
<ul>{{range .Items}}<li class="{{if .Done}}done{{else}}open{{end}}"><a href="/items/{{.ID}}">{{.Name}}</a> {{printf "%.2f" .Price}}</li>{{end}}</ul>
{{with .User}}<p>Signed in as {{.}}</p>{{else}}<p><a href="/login">Sign in</a></p>{{end}}
<footer>{{len .Items}} items</footer>
</body></html>`

type item struct {
	ID    int
	Name  string
	Price float64
	Done  bool
}

type page struct {
	Title string
	Items []item
	User  string
}

var items = func() []item {
	var out []item
	for i := range 5 {
		out = append(out, item{ID: i, Name: "item " + strconv.Itoa(i), Price: float64(i) * 1.5, Done: i%2 == 0})
	}
	return out
}()

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: redone VARIANT")
	}
	var h http.Handler
	switch os.Args[1] {
	case "template-bad":
		h = http.HandlerFunc(templatePerRequest)
	case "template-fixed":
		h = templateOnce()
	case "kdf-bad", "kdf-fixed":
		h = newAuth(os.Args[1] == "kdf-fixed")
	case "store-bad", "store-fixed":
		h = newStore(os.Args[1] == "store-fixed")
	case "regexp-bad":
		h = http.HandlerFunc(validatePerRequest)
	case "regexp-fixed":
		h = http.HandlerFunc(validateOnce)
	default:
		log.Fatalf("unknown variant %q", os.Args[1])
	}
	http.Handle("/work", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening %d\n", ln.Addr().(*net.TCPAddr).Port)
	log.Fatal(http.Serve(ln, nil))
}

// templatePerRequest parses the page for every request.
func templatePerRequest(w http.ResponseWriter, r *http.Request) {
	t, err := template.New("page").Parse(pageSource)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	t.Execute(w, page{Title: "Items", Items: items, User: r.URL.Query().Get("user")})
}

// templateOnce parses the page once and executes it per request.
func templateOnce() http.Handler {
	t := template.Must(template.New("page").Parse(pageSource))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Execute(w, page{Title: "Items", Items: items, User: r.URL.Query().Get("user")})
	})
}

// emailPattern is what the validating handlers accept as an address.
const emailPattern = `^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*\.[a-zA-Z]{2,}$`

// validatePerRequest compiles the pattern for every request.
func validatePerRequest(w http.ResponseWriter, r *http.Request) {
	re := regexp.MustCompile(emailPattern)
	answer(w, re.MatchString(r.URL.Query().Get("email")))
}

// email is compiled once, at start-up.
var email = regexp.MustCompile(emailPattern)

func validateOnce(w http.ResponseWriter, r *http.Request) {
	answer(w, email.MatchString(r.URL.Query().Get("email")))
}

func answer(w http.ResponseWriter, valid bool) {
	if !valid {
		http.Error(w, "invalid address", http.StatusBadRequest)
		return
	}
	io.WriteString(w, "ok\n")
}

// auth checks basic-auth credentials against a PBKDF2 hash.
type auth struct {
	salt, hash []byte
	remember   bool
	key        []byte // HMAC key for the verified-credential cache
	mu         sync.Mutex
	verified   map[[32]byte]bool
}

const iterations = 100_000

func newAuth(remember bool) *auth {
	a := &auth{salt: []byte("perfdoctor-salt!"), remember: remember, key: make([]byte, 32), verified: map[[32]byte]bool{}}
	rand.Read(a.key)
	a.hash = pbkdf2.Key([]byte("correct horse"), a.salt, iterations, 32, sha256.New)
	return a
}

func (a *auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || !a.check(user, pass) {
		w.Header().Set("WWW-Authenticate", `Basic realm="work"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	io.WriteString(w, "hello "+user+"\n")
}

func (a *auth) check(user, pass string) bool {
	if !a.remember {
		return a.verify(pass)
	}
	mac := hmac.New(sha256.New, a.key)
	io.WriteString(mac, user+"\x00"+pass)
	var k [32]byte
	copy(k[:], mac.Sum(nil))
	a.mu.Lock()
	ok := a.verified[k]
	a.mu.Unlock()
	if ok {
		return true
	}
	if !a.verify(pass) {
		return false
	}
	a.mu.Lock()
	a.verified[k] = true
	a.mu.Unlock()
	return true
}

func (a *auth) verify(pass string) bool {
	h := pbkdf2.Key([]byte(pass), a.salt, iterations, 32, sha256.New)
	return subtle.ConstantTimeCompare(h, a.hash) == 1
}

// store holds groups of series, as a metrics push gateway does: a write
// replaces one group, and no series name may have two types in the store.
type store struct {
	mu          sync.Mutex
	groups      map[string][]series
	incremental bool
	types       map[string]string // series name -> type, kept by the fixed variant
	owners      map[string]int    // series name -> groups using it
}

type series struct {
	Name, Type string
	Value      float64
}

const groupsInStore, seriesPerGroup = 500, 40

func newStore(incremental bool) *store {
	s := &store{groups: map[string][]series{}, incremental: incremental, types: map[string]string{}, owners: map[string]int{}}
	for g := range groupsInStore {
		s.put("job-"+strconv.Itoa(g), group(g))
	}
	return s
}

func group(g int) []series {
	out := make([]series, seriesPerGroup)
	for i := range out {
		out[i] = series{Name: "metric_" + strconv.Itoa(i), Type: []string{"counter", "gauge"}[i%2], Value: float64(g * i)}
	}
	return out
}

func (s *store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	job := r.URL.Query().Get("job")
	g, _ := strconv.Atoi(strings.TrimPrefix(job, "job-"))
	if err := s.put(job, group(g)); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	io.WriteString(w, "ok\n")
}

func (s *store) put(job string, g []series) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.incremental {
		return s.putIncremental(job, g)
	}
	if err := s.checkWhole(job, g); err != nil {
		return err
	}
	s.groups[job] = g
	return nil
}

// checkWhole gathers every group of the store with the new one, sorts the
// series by name and checks that each name has one type.
func (s *store) checkWhole(job string, g []series) error {
	var all []series
	for name, other := range s.groups {
		if name != job {
			all = append(all, other...)
		}
	}
	all = append(all, g...)
	sort.Slice(all, func(i, j int) bool {
		if all[i].Name != all[j].Name {
			return all[i].Name < all[j].Name
		}
		return all[i].Type < all[j].Type
	})
	for i := 1; i < len(all); i++ {
		if all[i].Name == all[i-1].Name && all[i].Type != all[i-1].Type {
			return fmt.Errorf("%s has types %s and %s", all[i].Name, all[i-1].Type, all[i].Type)
		}
	}
	return nil
}

// putIncremental checks the group against the types already in the store
// and keeps them up to date.
func (s *store) putIncremental(job string, g []series) error {
	for _, x := range g {
		if t, ok := s.types[x.Name]; ok && t != x.Type && s.owners[x.Name] > s.count(job, x.Name) {
			return fmt.Errorf("%s has types %s and %s", x.Name, t, x.Type)
		}
	}
	for _, x := range s.groups[job] {
		if s.owners[x.Name]--; s.owners[x.Name] == 0 {
			delete(s.owners, x.Name)
			delete(s.types, x.Name)
		}
	}
	for _, x := range g {
		s.types[x.Name] = x.Type
		s.owners[x.Name]++
	}
	s.groups[job] = g
	return nil
}

// count is how many series of the job's current group have name.
func (s *store) count(job, name string) int {
	n := 0
	for _, x := range s.groups[job] {
		if x.Name == name {
			n++
		}
	}
	return n
}
