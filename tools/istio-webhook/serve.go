package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// serveCommand serves /inject over TLS (a self-signed certificate for 127.0.0.1 and localhost,
// as h2load does not verify; -cert-out writes it as PEM for clients that do) and /readyz over
// plain HTTP, until SIGTERM or SIGINT.
func serveCommand(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var s settings
	s.register(fs)
	addr := fs.String("addr", "127.0.0.1:15017", "HTTPS address of /inject (loopback only)")
	monitoring := fs.String("monitoring-addr", "127.0.0.1:15014", "plain-HTTP address of /readyz")
	certOut := fs.String("cert-out", "", "write the serving certificate (PEM) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, a := range []string{*addr, *monitoring} {
		if err := requireLoopback(a); err != nil {
			return err
		}
	}
	stop := make(chan struct{})
	mux, err := newWebhook(s, stop)
	if err != nil {
		return err
	}
	cert, err := selfSignedCertificate()
	if err != nil {
		return err
	}
	if *certOut != "" {
		block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
		if err := os.WriteFile(*certOut, block, 0o644); err != nil {
			return fmt.Errorf("-cert-out %s: %v", *certOut, err)
		}
	}
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("-addr %s: %v", *addr, err)
	}
	server := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := server.ServeTLS(listener, "", ""); err != nil && err != http.ErrServerClosed {
			fmt.Fprintf(os.Stderr, "istio-webhook serve: %v\n", err)
			os.Exit(1)
		}
	}()
	ready := http.NewServeMux()
	ready.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	monitor := &http.Server{Addr: *monitoring, Handler: ready, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := monitor.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			fmt.Fprintf(os.Stderr, "istio-webhook serve: -monitoring-addr %s: %v\n", *monitoring, err)
			os.Exit(1)
		}
	}()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	close(stop)
	_ = monitor.Close()
	return server.Close()
}

// requireLoopback refuses any address that is not on 127.0.0.1 or ::1.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q: only loopback addresses (127.0.0.1, ::1) are served", addr)
	}
	return nil
}

// selfSignedCertificate is a fresh P-256 certificate for 127.0.0.1, ::1 and localhost.
func selfSignedCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "istio-webhook"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
