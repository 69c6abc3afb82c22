package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testReview = `{"request":{"uid":"u1","object":{"metadata":{"name":"p"},"spec":{"containers":[{"name":"app"}]}}}}`

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func response(uid, patch string) string {
	return `{"response":{"uid":"` + uid + `","allowed":true,"patchType":"JSONPatch","patch":"` +
		base64.StdEncoding.EncodeToString([]byte(patch)) + `"}}`
}

func TestPatchesThatGiveTheSamePodPassEvenWhenWrittenDifferently(t *testing.T) {
	dir := t.TempDir()
	review := writeFile(t, dir, "review.json", testReview)
	ours := writeFile(t, dir, "ours.json", response("u1",
		`[{"op":"add","path":"/spec/containers/-","value":{"name":"istio-proxy"}}]`))
	istio := writeFile(t, dir, "istio.json", response("u1",
		`[{"op":"add","path":"/spec/containers/1","value":{"name":"istio-proxy"}}]`))
	if err := checkCommand([]string{"-review", review, "-ours", ours, "-istio", istio}); err != nil {
		t.Fatalf("same pod reported as different: %v", err)
	}
}

func TestDifferentPodsFailShowingTheDifference(t *testing.T) {
	dir := t.TempDir()
	review := writeFile(t, dir, "review.json", testReview)
	ours := writeFile(t, dir, "ours.json", response("u1",
		`[{"op":"add","path":"/spec/containers/-","value":{"name":"istio-proxy","image":"a"}}]`))
	istio := writeFile(t, dir, "istio.json", response("u1",
		`[{"op":"add","path":"/spec/containers/-","value":{"name":"istio-proxy","image":"b"}}]`))
	err := checkCommand([]string{"-review", review, "-ours", ours, "-istio", istio})
	if err == nil || !strings.Contains(err.Error(), "differ") || !strings.Contains(err.Error(), `"image": "a"`) {
		t.Fatalf("want a difference naming the image, got %v", err)
	}
}

func TestAResponseWithoutAPatchIsNotAnInjection(t *testing.T) {
	dir := t.TempDir()
	review := writeFile(t, dir, "review.json", testReview)
	ours := writeFile(t, dir, "ours.json", `{"response":{"uid":"u1","allowed":true}}`)
	err := checkCommand([]string{"-review", review, "-ours", ours, "-istio", ours})
	if err == nil || !strings.Contains(err.Error(), "not injected") {
		t.Fatalf("want 'not injected', got %v", err)
	}
}

func TestAResponseToAnotherReviewIsRefused(t *testing.T) {
	dir := t.TempDir()
	review := writeFile(t, dir, "review.json", testReview)
	other := writeFile(t, dir, "other.json", response("u2", `[]`))
	err := checkCommand([]string{"-review", review, "-ours", other, "-istio", other})
	if err == nil || !strings.Contains(err.Error(), `"u2"`) {
		t.Fatalf("want a uid mismatch, got %v", err)
	}
}
