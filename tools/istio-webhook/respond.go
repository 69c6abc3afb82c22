package main

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
)

// respondCommand prints Istio's AdmissionReview response to one review, answered in-process by
// the same handler `serve` serves.
func respondCommand(args []string) error {
	fs := flag.NewFlagSet("respond", flag.ContinueOnError)
	var s settings
	s.register(fs)
	review := fs.String("review", "", "AdmissionReview JSON file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	body, err := os.ReadFile(*review)
	if err != nil {
		return fmt.Errorf("-review: %v", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	mux, err := newWebhook(s, stop)
	if err != nil {
		return err
	}
	out, err := admit(mux, body)
	if err != nil {
		return fmt.Errorf("%s: %v", *review, err)
	}
	_, err = os.Stdout.Write(out)
	return err
}

// admit posts one review to the webhook's /inject handler and returns the response body.
func admit(mux *http.ServeMux, body []byte) ([]byte, error) {
	req := httptest.NewRequest(http.MethodPost, "https://127.0.0.1/inject?timeout=10s", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("/inject answered %d: %s", rec.Code, rec.Body.String())
	}
	return rec.Body.Bytes(), nil
}
