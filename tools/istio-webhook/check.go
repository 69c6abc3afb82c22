package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

// reviewResponse is the part of an AdmissionReview response that decides the resulting pod.
type reviewResponse struct {
	Response *struct {
		UID       string `json:"uid"`
		Allowed   bool   `json:"allowed"`
		Patch     []byte `json:"patch"`
		PatchType string `json:"patchType"`
		Result    *struct {
			Message string `json:"message"`
		} `json:"result"`
	} `json:"response"`
}

// checkCommand applies both injectors' patches to the review's pod and fails, showing the first
// differing lines, unless the two pods are identical.
func checkCommand(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	review := fs.String("review", "", "the AdmissionReview both injectors answered")
	ours := fs.String("ours", "", "our server's response")
	istio := fs.String("istio", "", "Istio's server's response")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw, err := os.ReadFile(*review)
	if err != nil {
		return fmt.Errorf("-review: %v", err)
	}
	var rv struct {
		Request struct {
			UID    string          `json:"uid"`
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	if err := json.Unmarshal(raw, &rv); err != nil || len(rv.Request.Object) == 0 {
		return fmt.Errorf("%s: not an AdmissionReview with request.object (%v)", *review, err)
	}
	oursPod, err := patchedPod(*ours, rv.Request.UID, rv.Request.Object)
	if err != nil {
		return err
	}
	istioPod, err := patchedPod(*istio, rv.Request.UID, rv.Request.Object)
	if err != nil {
		return err
	}
	if reflect.DeepEqual(oursPod, istioPod) {
		fmt.Printf("%s: identical pods\n", *review)
		return nil
	}
	return fmt.Errorf("%s: the pods differ (ours %s, Istio's %s):\n%s", *review, *ours, *istio, firstDifference(oursPod, istioPod))
}

// patchedPod is the pod after the response's patch, decoded for a structural comparison.
func patchedPod(path, uid string, pod []byte) (any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var resp reviewResponse
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Response == nil {
		return nil, fmt.Errorf("%s: not an AdmissionReview response (%v)", path, err)
	}
	r := resp.Response
	switch {
	case r.UID != uid:
		return nil, fmt.Errorf("%s: response.uid %q, the review's is %q", path, r.UID, uid)
	case !r.Allowed:
		msg := ""
		if r.Result != nil {
			msg = r.Result.Message
		}
		return nil, fmt.Errorf("%s: the pod was denied: %s", path, msg)
	case len(r.Patch) == 0:
		return nil, fmt.Errorf("%s: no patch: the pod was not injected", path)
	case r.PatchType != "JSONPatch":
		return nil, fmt.Errorf("%s: patchType %q, want JSONPatch", path, r.PatchType)
	}
	patch, err := jsonpatch.DecodePatch(r.Patch)
	if err != nil {
		return nil, fmt.Errorf("%s: response.patch: %v", path, err)
	}
	out, err := patch.Apply(pod)
	if err != nil {
		return nil, fmt.Errorf("%s: applying response.patch: %v", path, err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("%s: patched pod: %v", path, err)
	}
	return v, nil
}

// firstDifference shows a few lines around the first line where the indented pods differ.
func firstDifference(a, b any) string {
	ja, _ := json.MarshalIndent(a, "", "  ")
	jb, _ := json.MarshalIndent(b, "", "  ")
	la, lb := strings.Split(string(ja), "\n"), strings.Split(string(jb), "\n")
	i := 0
	for i < len(la) && i < len(lb) && la[i] == lb[i] {
		i++
	}
	from := max(0, i-3)
	var sb strings.Builder
	for j := from; j < i+4; j++ {
		if j < len(la) && j < len(lb) && la[j] == lb[j] {
			fmt.Fprintf(&sb, "    %s\n", la[j])
			continue
		}
		if j < len(la) {
			fmt.Fprintf(&sb, "  ours  %s\n", la[j])
		}
		if j < len(lb) {
			fmt.Fprintf(&sb, "  istio %s\n", lb[j])
		}
	}
	return sb.String()
}
