// Package smtpfake is a local SMTP server for tests: it speaks real SMTP
// (EHLO, STARTTLS with a certificate made by the test, AUTH PLAIN checked
// against its credentials, MAIL, RCPT, DATA) and records every accepted
// message, so tests read the mails the gateway sent.
package smtpfake

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"mime"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one accepted mail.
type Message struct {
	From string
	To   []string
	// Data is the message as sent (headers and body, CRLF lines).
	Data string
	// TLS tells whether the session was encrypted when DATA came.
	TLS bool
}

// Subject is the decoded Subject header.
func (m Message) Subject() string {
	tp := textproto.NewReader(bufio.NewReader(strings.NewReader(m.Data)))
	h, _ := tp.ReadMIMEHeader()
	s, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil {
		return h.Get("Subject")
	}
	return s
}

// Server is a running fake.
type Server struct {
	// Host and Port are where it listens (Host is 127.0.0.1).
	Host string
	Port int64
	// Roots trust the server's certificate.
	Roots *x509.CertPool
	// Username and Password are the credentials AUTH PLAIN accepts.
	Username, Password string

	ln       net.Listener
	tls      *tls.Config
	implicit bool
	mu       sync.Mutex
	msgs     []Message
	// Fail, when set, answers every MAIL FROM with 451 (a server refusing).
	fail bool
}

// Options choose the fake's mode.
type Options struct {
	// ImplicitTLS serves TLS from the first byte (port 465's mode);
	// otherwise STARTTLS is offered.
	ImplicitTLS bool
	// NoTLS offers no STARTTLS (a plain relay on loopback).
	NoTLS bool
}

// Start runs a fake for t with credentials user/pass; it stops with t.
func Start(t testing.TB, user, pass string, o Options) *Server {
	t.Helper()
	cert, roots := makeCert(t)
	s := &Server{Username: user, Password: pass, Roots: roots, implicit: o.ImplicitTLS}
	if !o.NoTLS {
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.ImplicitTLS {
		ln = tls.NewListener(ln, s.tls)
	}
	s.ln = ln
	s.Host = "127.0.0.1"
	s.Port = int64(ln.Addr().(*net.TCPAddr).Port)
	go s.serve()
	t.Cleanup(func() { ln.Close() })
	return s
}

// SetFailing makes the server refuse (451) or accept mail again.
func (s *Server) SetFailing(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = fail
}

// Messages is every accepted message, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// To is the messages sent to addr, oldest first.
func (s *Server) To(addr string) []Message {
	var out []Message
	for _, m := range s.Messages() {
		for _, r := range m.To {
			if strings.EqualFold(r, addr) {
				out = append(out, m)
			}
		}
	}
	return out
}

func (s *Server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.session(c)
	}
}

func (s *Server) session(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	_, isTLS := c.(*tls.Conn)
	tp := textproto.NewConn(c)
	reply := func(code int, text string) { _ = tp.PrintfLine("%d %s", code, text) }
	reply(220, "smtpfake ready")
	var from string
	var to []string
	authed := false
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			lines := []string{"smtpfake"}
			if s.tls != nil && !isTLS {
				lines = append(lines, "STARTTLS")
			}
			lines = append(lines, "AUTH PLAIN", "8BITMIME")
			for i, l := range lines {
				sep := "-"
				if i == len(lines)-1 {
					sep = " "
				}
				_ = tp.PrintfLine("250%s%s", sep, l)
			}
		case "STARTTLS":
			if s.tls == nil || isTLS {
				reply(502, "no STARTTLS")
				continue
			}
			reply(220, "go ahead")
			tc := tls.Server(c, s.tls)
			if err := tc.Handshake(); err != nil {
				return
			}
			c, isTLS = tc, true
			tp = textproto.NewConn(c)
			from, to, authed = "", nil, false
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			if !strings.EqualFold(mech, "PLAIN") {
				reply(504, "only PLAIN")
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(resp)
			parts := strings.Split(string(raw), "\x00")
			if err != nil || len(parts) != 3 || parts[1] != s.Username || parts[2] != s.Password {
				reply(535, "authentication failed")
				continue
			}
			authed = true
			reply(235, "ok")
		case "MAIL":
			s.mu.Lock()
			fail := s.fail
			s.mu.Unlock()
			switch {
			case s.Username != "" && !authed:
				reply(530, "authentication required")
			case fail:
				reply(451, "try again later")
			default:
				from = addrOf(arg)
				reply(250, "ok")
			}
		case "RCPT":
			if from == "" {
				reply(503, "need MAIL")
				continue
			}
			to = append(to, addrOf(arg))
			reply(250, "ok")
		case "DATA":
			if len(to) == 0 {
				reply(503, "need RCPT")
				continue
			}
			reply(354, "go on")
			data, err := tp.ReadDotLines()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, Message{From: from, To: to, Data: strings.Join(data, "\r\n"), TLS: isTLS})
			s.mu.Unlock()
			from, to = "", nil
			reply(250, "queued")
		case "RSET":
			from, to = "", nil
			reply(250, "ok")
		case "NOOP":
			reply(250, "ok")
		case "QUIT":
			reply(221, "bye")
			return
		default:
			reply(502, "unknown command")
		}
	}
}

// addrOf takes the address out of "FROM:<a@b> …" or "TO:<a@b>".
func addrOf(arg string) string {
	i, j := strings.Index(arg, "<"), strings.Index(arg, ">")
	if i < 0 || j < i {
		return ""
	}
	return arg[i+1 : j]
}

// makeCert is a self-signed certificate for 127.0.0.1 and localhost, and a
// pool that trusts it.
func makeCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "smtpfake"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// PortText is the port as an option value.
func (s *Server) PortText() string { return strconv.FormatInt(s.Port, 10) }
