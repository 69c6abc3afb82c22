package main

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchCommand measures Istio's /inject handler with testing.Benchmark, in process CPU time
// (user + system of every thread, so the garbage collector's work counts) per admission, over
// rounds that alternate the pods. Prints one tab-separated line per pod:
// name, min µs, median µs, median wall µs/op.
func benchCommand(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var s settings
	s.register(fs)
	rounds := fs.Int("rounds", 5, "rounds per pod")
	benchtime := fs.Duration("benchtime", time.Second, "testing.Benchmark's target time per round")
	if err := fs.Parse(args); err != nil {
		return err
	}
	type pod struct {
		name string
		body []byte
		cpu  []float64
		wall []float64
	}
	var pods []*pod
	for _, arg := range fs.Args() {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("%q: want NAME=REVIEW_FILE", arg)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pods = append(pods, &pod{name: name, body: body})
	}
	if len(pods) == 0 {
		return fmt.Errorf("no NAME=REVIEW_FILE given")
	}
	testing.Init()
	if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	mux, err := newWebhook(s, stop)
	if err != nil {
		return err
	}
	for _, p := range pods {
		out, err := admit(mux, p.body)
		if err != nil {
			return fmt.Errorf("%s: %v", p.name, err)
		}
		if !bytes.Contains(out, []byte(`"patch"`)) {
			return fmt.Errorf("%s: Istio did not inject the pod: %s", p.name, out)
		}
	}
	for r := 0; r < *rounds; r++ {
		for _, p := range pods {
			ops := 0
			before := cpuTime()
			result := testing.Benchmark(func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					req := httptest.NewRequest(http.MethodPost, "https://127.0.0.1/inject?timeout=10s", bytes.NewReader(p.body))
					req.Header.Set("Content-Type", "application/json")
					mux.ServeHTTP(httptest.NewRecorder(), req)
				}
				ops += b.N
			})
			p.cpu = append(p.cpu, float64(cpuTime()-before)/float64(ops)/1e3)
			p.wall = append(p.wall, float64(result.NsPerOp())/1e3)
		}
	}
	for _, p := range pods {
		fmt.Printf("%s\t%.1f\t%.1f\t%.1f\n", p.name, minimum(p.cpu), median(p.cpu), median(p.wall))
	}
	return nil
}

// cpuTime is this process's user + system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func minimum(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
