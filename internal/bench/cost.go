package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/rest"
)

// Cost is what a run cost the instance's processes.
type Cost struct {
	// CPUSeconds each process used during the run, by component.
	CPUSeconds map[string]float64 `json:"cpuSeconds,omitempty"`
	// Writes counts the API writes made during the run by client, verb,
	// resource and workload class, from kube-apiserver's audit log (berth
	// up --audit-writes); empty without it.
	Writes []WriteCount `json:"writes,omitempty"`
	// Profiles are the CPU profiles saved (--profile), one per process.
	Profiles []string `json:"profiles,omitempty"`
	// Notes say what could not be measured, and why.
	Notes []string `json:"notes,omitempty"`
}

// WriteCount is how many writes one client made of one kind.
type WriteCount struct {
	Client   string `json:"client"`
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Class is the workload class of the object written, "" when it is
	// no workload's (a queue's status, a node).
	Class string `json:"class,omitempty"`
	Count int    `json:"count"`
	// Failed of them were refused (a conflict, mostly).
	Failed int `json:"failed,omitempty"`
}

// benchProcess is the bench's own entry in Cost.CPUSeconds.
const benchProcess = "berth bench (this run)"

// meter measures a run's cost between start and end.
type meter struct {
	o         Options
	stop      context.CancelFunc // ends the profiling
	notes     []string           // what could not be measured from the start
	cpuBefore map[string]float64
	logOffset int64
	profiles  []*profiler
}

// profileChunk is how long each profile request lasts: kube-apiserver
// ends requests after a minute, so a run is profiled in pieces, merged.
const profileChunk = 20 * time.Second

// startMeter notes where the run starts: each process's CPU time, the
// writes log's length, and starts profiling when asked.
func startMeter(ctx context.Context, cfg *rest.Config, o Options) *meter {
	ctx, stop := context.WithCancel(ctx)
	m := &meter{o: o, stop: stop, cpuBefore: map[string]float64{}}
	// The bench shares the machine with what it measures: its own CPU
	// says how much of the machine the load itself took.
	m.o.Processes = maps.Clone(o.Processes)
	if m.o.Processes == nil {
		m.o.Processes = map[string]int{}
	}
	m.o.Processes[benchProcess] = os.Getpid()
	for name, pid := range m.o.Processes {
		if c := cpuOf(pid); c != nil {
			m.cpuBefore[name] = *c
		}
	}
	if o.WritesLog != "" {
		m.logOffset = logOffsets(map[string]string{"": o.WritesLog})[""]
	}
	if o.Profile != "" {
		if api, err := apiServerProfiles(cfg); err == nil {
			m.profiles = append(m.profiles, startProfiler(ctx, "kube-apiserver", api,
				"start berth up with --apiserver-arg=--profiling=true"))
		} else {
			m.notes = append(m.notes, "kube-apiserver CPU profile: "+err.Error())
		}
		if o.ControllerMetrics == "" {
			m.notes = append(m.notes, "berth-controller CPU profile: the run knows no controller to ask (run against a berth instance)")
		}
		if o.ControllerMetrics != "" {
			url := "http://" + o.ControllerMetrics + "/debug/pprof/profile"
			m.profiles = append(m.profiles, startProfiler(ctx, "berth-controller", plainProfiles(url),
				"start berth up with --controller-flag=--profiling"))
		}
	}
	return m
}

// end stops the meter: CPU used since start, the writes logged since (by
// the class classOf gives each object's name), and the profiles written.
func (m *meter) end(classOf func(name string) string) Cost {
	m.stop()
	c := Cost{Notes: m.notes}
	for name, pid := range m.o.Processes {
		before, ok := m.cpuBefore[name]
		if after := cpuOf(pid); ok && after != nil {
			if c.CPUSeconds == nil {
				c.CPUSeconds = map[string]float64{}
			}
			c.CPUSeconds[name] = *after - before
		}
	}
	if m.o.WritesLog != "" {
		writes, err := readWrites(m.o.WritesLog, m.logOffset, classOf)
		if err != nil {
			c.Notes = append(c.Notes, "writes by client: "+err.Error())
		}
		c.Writes = writes
	}
	for _, p := range m.profiles {
		file, err := p.finish(m.o.Profile)
		if err != nil {
			c.Notes = append(c.Notes, fmt.Sprintf("%s CPU profile: %v", p.name, err))
			continue
		}
		c.Profiles = append(c.Profiles, file)
	}
	return c
}

// logOffsets notes how long each log is now, so that only what comes
// after is counted; a log not there yet starts at 0.
func logOffsets(logs map[string]string) map[string]int64 {
	out := map[string]int64{}
	for name, path := range logs {
		if st, err := os.Stat(path); err == nil {
			out[name] = st.Size()
		}
	}
	return out
}

// readWrites counts the writes in an audit log from offset on, once the
// log has stopped growing (kube-apiserver writes it in batches).
func readWrites(path string, offset int64, classOf func(string) string) ([]WriteCount, error) {
	var size int64 = -1
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		st, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if st.Size() == size {
			break
		}
		size = st.Size()
		time.Sleep(1500 * time.Millisecond) // longer than the log's batch wait (1s)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return countWrites(f, classOf)
}

// auditEvent is what countWrites reads of an audit log line.
type auditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// countWrites counts an audit log's completed writes by client, verb,
// resource and class; dry runs store nothing and are left out. Lines it
// cannot read are skipped: a log cut by a crash ends with half a line.
func countWrites(r io.Reader, classOf func(string) string) ([]WriteCount, error) {
	type key struct{ client, verb, resource, class string }
	counts := map[key]*WriteCount{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Stage != "ResponseComplete" || e.ObjectRef == nil || dryRun(e.RequestURI) {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		k := key{clientName(e.User.Username), e.Verb, res, ""}
		if classOf != nil && e.ObjectRef.Name != "" {
			k.class = classOf(e.ObjectRef.Name)
		}
		wc := counts[k]
		if wc == nil {
			wc = &WriteCount{Client: k.client, Verb: k.verb, Resource: k.resource, Class: k.class}
			counts[k] = wc
		}
		wc.Count++
		if e.ResponseStatus != nil && e.ResponseStatus.Code >= 300 {
			wc.Failed++
		}
	}
	out := make([]WriteCount, 0, len(counts))
	for _, wc := range counts {
		out = append(out, *wc)
	}
	slices.SortFunc(out, func(a, b WriteCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Client+a.Verb+a.Resource+a.Class, b.Client+b.Verb+b.Resource+b.Class)
	})
	return out, sc.Err()
}

// dryRun says whether a request asked for a dry run.
func dryRun(requestURI string) bool {
	u, err := url.ParseRequestURI(requestURI)
	return err == nil && u.Query().Has("dryRun")
}

// clientName names a writer for people: kube-controller-manager's
// controllers write as service accounts of kube-system.
func clientName(user string) string {
	if sa, ok := strings.CutPrefix(user, "system:serviceaccount:kube-system:"); ok {
		return "kube-controller-manager/" + sa
	}
	switch user {
	case "system:kube-scheduler":
		return "kube-scheduler"
	case "system:kube-controller-manager":
		return "kube-controller-manager"
	case "system:apiserver":
		return "kube-apiserver"
	}
	return user
}

// classByName tells the class of an object by its name: the plan names
// a class's workloads <class>-q<queue>-<n>, and what berth and Kubernetes
// make for them (Workloads of Jobs, pods, events) carries that name.
func classByName(classes []string) func(string) string {
	return func(name string) string {
		for _, c := range classes {
			i := strings.Index(name, c+"-q")
			if i == 0 || i > 0 && name[i-1] == '-' {
				return c
			}
		}
		return ""
	}
}

// profiler takes consecutive CPU profiles of one process until the run ends.
type profiler struct {
	name string
	hint string
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  []*profile.Profile
	err  error
}

// fetchProfile returns one CPU profile of the given length.
type fetchProfile func(ctx context.Context, seconds int) ([]byte, error)

func startProfiler(ctx context.Context, name string, fetch fetchProfile, hint string) *profiler {
	p := &profiler{name: name, hint: hint}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// Each piece runs to its end even once the run has: the request
		// cannot be cut short without losing the piece.
		for ctx.Err() == nil {
			raw, err := fetch(context.WithoutCancel(ctx), int(profileChunk/time.Second))
			if err == nil {
				var prof *profile.Profile
				if prof, err = profile.ParseData(raw); err == nil {
					p.mu.Lock()
					p.got = append(p.got, prof)
					p.mu.Unlock()
					continue
				}
			}
			p.mu.Lock()
			p.err = err
			p.mu.Unlock()
			return
		}
	}()
	return p
}

// finish waits for the piece being taken and writes the merged profile
// into dir as cpu-<name>.pb.gz.
func (p *profiler) finish(dir string) (string, error) {
	p.wg.Wait()
	if len(p.got) == 0 {
		if p.err != nil {
			return "", fmt.Errorf("%w (%s)", p.err, p.hint)
		}
		return "", fmt.Errorf("the run ended before a profile was taken")
	}
	merged, err := profile.Merge(p.got)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := merged.Write(&buf); err != nil {
		return "", err
	}
	file := filepath.Join(dir, "cpu-"+p.name+".pb.gz")
	return file, os.WriteFile(file, buf.Bytes(), 0o644)
}

// apiServerProfiles fetches kube-apiserver's profiles as the bench's user.
func apiServerProfiles(cfg *rest.Config) (fetchProfile, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(cfg.Host, "/") + "/debug/pprof/profile"
	return httpProfiles(hc, url), nil
}

// plainProfiles fetches profiles over plain HTTP on loopback.
func plainProfiles(url string) fetchProfile { return httpProfiles(http.DefaultClient, url) }

func httpProfiles(hc *http.Client, url string) fetchProfile {
	return func(ctx context.Context, seconds int) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s?seconds=%d", url, seconds), nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return body, nil
	}
}

// costRows adds a summary's rows of CPU per process and API writes per
// unit of work (workload, pod) by client, and the notes.
func costRows(b *strings.Builder, c Cost, workloads int, unit string) {
	for _, name := range slices.Sorted(maps.Keys(c.CPUSeconds)) {
		fmt.Fprintf(b, "| CPU of %s | %.1f s |\n", name, c.CPUSeconds[name])
	}
	if len(c.Writes) > 0 {
		byClient := map[string]int{}
		total := 0
		for _, w := range c.Writes {
			byClient[w.Client] += w.Count
			total += w.Count
		}
		per := func(n int) float64 { return float64(n) / float64(max(workloads, 1)) }
		var parts []string
		for _, cl := range slices.SortedFunc(maps.Keys(byClient), func(a, b string) int { return byClient[b] - byClient[a] }) {
			parts = append(parts, fmt.Sprintf("%s %.2f", cl, per(byClient[cl])))
		}
		fmt.Fprintf(b, "| API writes per %s (by client) | %.2f (%s) |\n", unit, per(total), strings.Join(parts, ", "))
	}
	for _, p := range c.Profiles {
		fmt.Fprintf(b, "| CPU profile | %s |\n", p)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(b, "| not measured | %s |\n", n)
	}
}

// writesTable is a summary's table of writes per workload by client, verb
// and resource, and by class where an object was a class's.
func writesTable(b *strings.Builder, c Cost, classes map[string]int, workloads int, unit string) {
	if len(c.Writes) == 0 {
		return
	}
	type key struct{ client, verb, resource string }
	rows := map[key]map[string]int{} // by class; "" is the total
	for _, w := range c.Writes {
		k := key{w.Client, w.Verb, w.Resource}
		if rows[k] == nil {
			rows[k] = map[string]int{}
		}
		rows[k][""] += w.Count
		rows[k]["failed"] += w.Failed
		if w.Class != "" {
			rows[k][w.Class] += w.Count
		}
	}
	names := slices.Sorted(maps.Keys(classes))
	fmt.Fprintf(b, "\nAPI writes per %s, by client, verb and resource (from kube-apiserver's audit log):\n\n", unit)
	fmt.Fprintf(b, "| client | verb | resource | per %s | refused |", unit)
	for _, n := range names {
		fmt.Fprintf(b, " per %s %s |", n, unit)
	}
	fmt.Fprintf(b, "\n|---|---|---|---|---|%s\n", strings.Repeat("---|", len(names)))
	keys := slices.SortedFunc(maps.Keys(rows), func(a, b key) int {
		if rows[a][""] != rows[b][""] {
			return rows[b][""] - rows[a][""]
		}
		return strings.Compare(a.client+a.verb+a.resource, b.client+b.verb+b.resource)
	})
	for _, k := range keys {
		r := rows[k]
		fmt.Fprintf(b, "| %s | %s | %s | %.3f | %d |", k.client, k.verb, k.resource, float64(r[""])/float64(max(workloads, 1)), r["failed"])
		for _, n := range names {
			fmt.Fprintf(b, " %.3f |", float64(r[n])/float64(max(classes[n], 1)))
		}
		b.WriteString("\n")
	}
}
