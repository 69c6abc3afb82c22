// Command pod-burst creates a burst of pods through a real kube-apiserver and times each
// creation, for bench/e2e-burst.sh. Standard library only.
//
//	pod-burst post  -server URL -ca CA -cert CERT -key KEY -namespace NS -pod POD.json -count 1000 -parallel 4 -out LAT.tsv
//	pod-burst scale -server URL -ca CA -cert CERT -key KEY -namespace NS -deployment NAME -count 1000 -out LAT.tsv
//	pod-burst render -pod POD.json -index I
//
// post: COUNT distinct pods (POD.json with metadata.name burst-NNNNN and an env var BURST_INDEX
// in every container, so no two pods are alike), POSTed by PARALLEL workers over one shared
// HTTP/2 connection, as client-go does; each POST's latency is written to OUT as it finishes.
//
// scale: opens a watch on the namespace's pods, sets the Deployment's replicas to COUNT and waits
// until COUNT pods were added (the ReplicaSet controller of kube-controller-manager creates them);
// OUT gets each pod's arrival in the watch, from the scale request.
//
// render: prints pod I of a post burst (the body POSTed), to make its AdmissionReview.
//
// post and scale print one summary line on stdout: "count wall_s p50_ms p99_ms failed".
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pod-burst post|scale [flags]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	server := fs.String("server", "", "kube-apiserver URL (https://127.0.0.1:PORT)")
	caFile := fs.String("ca", "", "CA bundle of the API server")
	certFile := fs.String("cert", "", "client certificate")
	keyFile := fs.String("key", "", "client key")
	namespace := fs.String("namespace", "", "namespace of the pods")
	podFile := fs.String("pod", "", "post: the pod to create, as JSON")
	deployment := fs.String("deployment", "", "scale: the Deployment to scale")
	count := fs.Int("count", 1000, "pods to create")
	parallel := fs.Int("parallel", 4, "post: POSTs in flight")
	out := fs.String("out", "", "per-pod latencies (TSV)")
	http1 := fs.Bool("http1", false, "HTTP/1.1 with one connection per worker instead of one HTTP/2 connection")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	index := fs.Int("index", 0, "render: which pod")
	_ = fs.Parse(os.Args[2:])
	if mode == "render" {
		if *podFile == "" || *index < 0 {
			fail("render needs -pod and -index >= 0")
		}
		os.Stdout.Write(bodies(*podFile, *index+1)[*index])
		return
	}
	if *server == "" || *caFile == "" || *certFile == "" || *keyFile == "" || *namespace == "" || *out == "" {
		fail("-server, -ca, -cert, -key, -namespace and -out are required")
	}
	client := newClient(*caFile, *certFile, *keyFile, *parallel, *http1)
	var res result
	switch mode {
	case "post":
		if *podFile == "" {
			fail("post needs -pod")
		}
		res = post(client, *server, *namespace, *podFile, *count, *parallel)
	case "scale":
		if *deployment == "" {
			fail("scale needs -deployment")
		}
		res = scale(client, *server, *namespace, *deployment, *count, *timeout)
	default:
		fail("unknown mode " + strconv.Quote(mode) + " (post or scale)")
	}
	if err := res.write(*out); err != nil {
		fail(err.Error())
	}
	lat := res.sortedMillis()
	fmt.Printf("%d\t%.3f\t%.2f\t%.2f\t%d\n", len(lat), res.wall.Seconds(), quantile(lat, 0.50), quantile(lat, 0.99), res.failed)
	if res.failed > 0 {
		os.Exit(1)
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "pod-burst: "+msg)
	os.Exit(2)
}

// newClient is an HTTPS client with the admin's certificate; HTTP/2 unless http1 (then up to
// conns keep-alive connections).
func newClient(caFile, certFile, keyFile string, conns int, http1 bool) *http.Client {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		fail("reading the CA: " + err.Error())
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		fail(caFile + ": no PEM certificate")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		fail("loading the client certificate: " + err.Error())
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		ForceAttemptHTTP2:   !http1,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}
	if http1 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// sample is one pod: when it was started/seen (from the burst's start) and how long it took.
type sample struct {
	index   int
	start   time.Duration
	latency time.Duration
	status  int
	problem string
}

type result struct {
	samples []sample
	wall    time.Duration
	failed  int
}

func (r *result) write(path string) error {
	var b bytes.Buffer
	b.WriteString("index\tstart_ms\tlatency_ms\tstatus\tproblem\n")
	for _, s := range r.samples {
		fmt.Fprintf(&b, "%d\t%.3f\t%.3f\t%d\t%s\n", s.index, ms(s.start), ms(s.latency), s.status, s.problem)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func (r *result) sortedMillis() []float64 {
	var lat []float64
	for _, s := range r.samples {
		if s.problem == "" {
			lat = append(lat, ms(s.latency))
		}
	}
	sort.Float64s(lat)
	return lat
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)) * q)
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// bodies renders the count distinct pods before any is sent.
func bodies(podFile string, count int) [][]byte {
	raw, err := os.ReadFile(podFile)
	if err != nil {
		fail("reading the pod: " + err.Error())
	}
	out := make([][]byte, count)
	for i := range out {
		var pod map[string]any
		if err := json.Unmarshal(raw, &pod); err != nil {
			fail(podFile + ": not a JSON object: " + err.Error())
		}
		meta, _ := pod["metadata"].(map[string]any)
		spec, _ := pod["spec"].(map[string]any)
		containers, _ := spec["containers"].([]any)
		if meta == nil || len(containers) == 0 {
			fail(podFile + ": needs metadata and spec.containers")
		}
		delete(meta, "generateName")
		meta["name"] = fmt.Sprintf("burst-%05d", i)
		for _, c := range containers {
			container, _ := c.(map[string]any)
			env, _ := container["env"].([]any)
			container["env"] = append(env, map[string]any{"name": "BURST_INDEX", "value": strconv.Itoa(i)})
		}
		if out[i], err = json.Marshal(pod); err != nil {
			fail("encoding pod " + strconv.Itoa(i) + ": " + err.Error())
		}
	}
	return out
}

func post(client *http.Client, server, namespace, podFile string, count, parallel int) result {
	pods := bodies(podFile, count)
	url := server + "/api/v1/namespaces/" + namespace + "/pods"
	samples := make([]sample, count)
	next := make(chan int)
	var wg sync.WaitGroup
	t0 := time.Now()
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				s := sample{index: i, start: time.Since(t0)}
				status, problem := create(client, url, pods[i])
				s.latency = time.Since(t0) - s.start
				s.status, s.problem = status, problem
				samples[i] = s
			}
		}()
	}
	for i := range pods {
		next <- i
	}
	close(next)
	wg.Wait()
	res := result{samples: samples, wall: time.Since(t0)}
	for _, s := range samples {
		if s.problem != "" {
			res.failed++
		}
	}
	return res
}

func create(client *http.Client, url string, body []byte) (int, string) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return resp.StatusCode, strconv.Quote(string(bytes.TrimSpace(text)))
	}
	return resp.StatusCode, ""
}

// scale sets the Deployment's replicas and times the pods' arrival in a watch.
func scale(client *http.Client, server, namespace, deployment string, count int, timeout time.Duration) result {
	base := server + "/api/v1/namespaces/" + namespace + "/pods"
	list, err := client.Get(base + "?limit=1")
	if err != nil {
		fail("listing pods: " + err.Error())
	}
	var meta struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []any `json:"items"`
	}
	err = json.NewDecoder(list.Body).Decode(&meta)
	list.Body.Close()
	if err != nil || list.StatusCode != http.StatusOK {
		fail(fmt.Sprintf("listing pods: status %d %v", list.StatusCode, err))
	}
	if len(meta.Items) > 0 {
		fail("namespace " + namespace + " already has pods")
	}
	watchClient := *client
	watchClient.Timeout = 0
	watch, err := watchClient.Get(base + "?watch=1&allowWatchBookmarks=false&resourceVersion=" + meta.Metadata.ResourceVersion)
	if err != nil || watch.StatusCode != http.StatusOK {
		fail(fmt.Sprintf("watching pods: %v", err))
	}
	defer watch.Body.Close()

	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, count)
	req, _ := http.NewRequest(http.MethodPatch,
		server+"/apis/apps/v1/namespaces/"+namespace+"/deployments/"+deployment+"/scale", bytes.NewBufferString(patch))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		fail("scaling: " + err.Error())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail(fmt.Sprintf("scaling %s: status %d: %s", deployment, resp.StatusCode, body))
	}

	samples := make([]sample, 0, count)
	done := make(chan struct{})
	go func() {
		defer close(done)
		dec := json.NewDecoder(watch.Body)
		for len(samples) < count {
			var ev struct {
				Type string `json:"type"`
			}
			if err := dec.Decode(&ev); err != nil {
				return
			}
			if ev.Type == "ADDED" {
				at := time.Since(t0)
				samples = append(samples, sample{index: len(samples), start: at, latency: at, status: 201})
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		fail(fmt.Sprintf("only %d of %d pods after %s", len(samples), count, timeout))
	}
	if len(samples) < count {
		fail(fmt.Sprintf("the watch ended after %d of %d pods", len(samples), count))
	}
	return result{samples: samples, wall: samples[len(samples)-1].start}
}
