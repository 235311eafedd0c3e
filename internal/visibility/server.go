package visibility

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/internal/queue"
)

// Lines is where the queues are: the scheduler.
type Lines interface {
	// Line copies out a ClusterQueue's waiting workloads, unordered.
	Line(cq string) ([]queue.Waiting, bool)
	// LocalQueueLine gives a LocalQueue's ClusterQueue and its line,
	// unordered.
	LocalQueueLine(key string) (cq string, line []queue.Waiting, ok bool)
}

// Why a replica cannot answer yet; Server says so with 503.
var (
	ErrNotLeading = errors.New("this berth controller replica does not lead: only the leader has the queues; ask again")
	ErrNotSynced  = errors.New("the berth controller is still reading the cluster's queues and workloads; ask again")
)

// Path is the API's root; the server answers everything under it.
const Path = "/apis/" + visibilityv1.GroupName + "/" + visibilityv1.Version

// OpenAPIPath is where the API server fetches the API's OpenAPI document.
// It describes no schema (the answers are plain JSON documents described in
// api/visibility/v1beta1); without it the API server would retry forever.
const OpenAPIPath = "/openapi/v2"

// Server answers the visibility API.
type Server struct {
	Lines Lines
	Proxy FrontProxy
	// Ready says why the queues cannot be shown yet (not leading, caches
	// not synced), or nil.
	Ready func() error
	Clock clock.PassiveClock
}

// ServeHTTP answers discovery and the two pendingworkloads views.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := s.Proxy.Verify(r.TLS, s.Clock.Now()); err != nil {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, err.Error())
		return
	}
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("%s: the visibility API is read-only (GET)", r.Method))
		return
	}
	if r.URL.Path == OpenAPIPath {
		writeJSON(w, http.StatusOK, map[string]any{"swagger": "2.0",
			"info": map[string]string{"title": "berth visibility API", "version": visibilityv1.Version}, "paths": map[string]any{}})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Path)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, r.URL.Path+": not found")
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "" || rest == "/":
		writeJSON(w, http.StatusOK, discovery())
	case len(parts) == 3 && parts[0] == "clusterqueues" && parts[2] == visibilityv1.PendingWorkloads:
		s.answer(w, r, parts[1], "", "")
	case len(parts) == 5 && parts[0] == "namespaces" && parts[2] == "localqueues" && parts[4] == visibilityv1.PendingWorkloads:
		s.answer(w, r, "", parts[1], parts[3])
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, r.URL.Path+": not found")
	}
}

// answer pages the line of ClusterQueue cq, or, with lq, of LocalQueue
// ns/lq's ClusterQueue filtered to ns/lq.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, cq, ns, lq string) {
	offset, err := intParam(r, "offset", 0, 0, visibilityv1.MaxOffset)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	limit, err := intParam(r, "limit", visibilityv1.DefaultLimit, 1, visibilityv1.MaxLimit)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	if err := s.Ready(); err != nil {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
		return
	}
	// The page is named for the queue asked about.
	var (
		line  []queue.Waiting
		found bool
		key   string // the LocalQueue's namespace/name, if one was asked about
		meta  = metav1.ObjectMeta{Name: cq}
		what  = "ClusterQueue " + cq
	)
	if lq == "" {
		line, found = s.Lines.Line(cq)
	} else {
		key, meta, what = ns+"/"+lq, metav1.ObjectMeta{Namespace: ns, Name: lq}, "LocalQueue "+ns+"/"+lq
		cq, line, found = s.Lines.LocalQueueLine(key)
	}
	if !found {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, what+" not found")
		return
	}
	sum := Summarize(cq, line, key, offset, limit)
	sum.ObjectMeta = meta
	writeJSON(w, http.StatusOK, sum)
}

// intParam reads query parameter name, def when absent; bounded, so that
// offset+limit never overflows.
func intParam(r *http.Request, name string, def, least, most int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least || n > most {
		return 0, fmt.Errorf("%s=%q: must be an integer from %d to %d", name, v, least, most)
	}
	return n, nil
}

// discovery lists the API's resources, as the API server asks before it
// routes to it and kubectl does.
func discovery() *metav1.APIResourceList {
	sub := func(parent string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: parent + "/" + visibilityv1.PendingWorkloads, Namespaced: namespaced,
			Kind: "PendingWorkloadsSummary", Verbs: metav1.Verbs{"get"}}
	}
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: visibilityv1.GroupName + "/" + visibilityv1.Version,
		APIResources: []metav1.APIResource{sub("clusterqueues", false), sub("localqueues", true)},
	}
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	writeJSON(w, code, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
