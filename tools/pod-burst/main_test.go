package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestBodiesAreDistinctNamedPodsWithTheirIndex(t *testing.T) {
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-","labels":{"app":"web"}},
	  "spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"}]},{"name":"b"}]}}`
	file := filepath.Join(t.TempDir(), "pod.json")
	if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	out := bodies(file, 3)
	seen := map[string]bool{}
	for i, body := range out {
		seen[string(body)] = true
		var got struct {
			Metadata map[string]any `json:"metadata"`
			Spec     struct {
				Containers []struct {
					Env []map[string]string `json:"env"`
				} `json:"containers"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got.Metadata["generateName"]; ok {
			t.Errorf("pod %d keeps generateName", i)
		}
		if want := []string{"burst-00000", "burst-00001", "burst-00002"}[i]; got.Metadata["name"] != want {
			t.Errorf("pod %d is named %v, want %s", i, got.Metadata["name"], want)
		}
		for c, container := range got.Spec.Containers {
			last := container.Env[len(container.Env)-1]
			if last["name"] != "BURST_INDEX" || last["value"] != []string{"0", "1", "2"}[i] {
				t.Errorf("pod %d container %d: last env %v", i, c, last)
			}
		}
		if len(got.Spec.Containers[0].Env) != 2 {
			t.Errorf("pod %d: the template's env var is lost: %v", i, got.Spec.Containers[0].Env)
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct bodies of 3", len(seen))
	}
}

func TestQuantileIsTheSampleAtTheRank(t *testing.T) {
	values := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := quantile(values, 0.5); got != 6 {
		t.Errorf("p50 %v, want 6", got)
	}
	if got := quantile(values, 0.99); got != 10 {
		t.Errorf("p99 %v, want 10", got)
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing %v, want 0", got)
	}
}
