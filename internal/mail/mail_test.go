package mail_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/smtpfake"
	"github.com/modelgate/modelgate/internal/mail"
)

func configOf(s *smtpfake.Server) mail.Config {
	return mail.Config{Server: s.Host, Port: s.Port, Account: "bot@example.com", Token: "smtp-pass", From: "Gate <bot@example.com>"}
}

func TestSendOverSTARTTLS(t *testing.T) {
	srv := smtpfake.Start(t, "bot@example.com", "smtp-pass", smtpfake.Options{})
	s := &mail.Sender{Roots: srv.Roots}
	msg := mail.VerificationMail("zh", "网关", "u@example.com", "123456", 10)
	if err := s.Send(context.Background(), configOf(srv), msg); err != nil {
		t.Fatal(err)
	}
	got := srv.To("u@example.com")
	if len(got) != 1 || !got[0].TLS || !strings.Contains(got[0].Data, "123456") || got[0].Subject() != "网关 邮箱验证" {
		t.Fatalf("messages %+v", got)
	}
	if got[0].From != "bot@example.com" {
		t.Errorf("envelope from %q", got[0].From)
	}
}

func TestSendImplicitTLS(t *testing.T) {
	srv := smtpfake.Start(t, "bot@example.com", "smtp-pass", smtpfake.Options{ImplicitTLS: true})
	// A plain dial (STARTTLS mode) to an implicit-TLS server fails...
	s := &mail.Sender{Roots: srv.Roots, Timeout: 2 * time.Second}
	if err := s.Send(context.Background(), configOf(srv), mail.VerificationMail("en", "G", "u@example.com", "1", 10)); err == nil {
		t.Fatal("a plain dial to an implicit-TLS server succeeded")
	}
	// ...and the implicit-TLS port (465 in production) speaks TLS first.
	s.ImplicitTLSPort = srv.Port
	if err := s.Send(context.Background(), configOf(srv), mail.ResetMail("en", "G", "u@example.com", "http://x/reset?a=1&b=2", 15)); err != nil {
		t.Fatal(err)
	}
	got := srv.To("u@example.com")
	if len(got) != 1 || !got[0].TLS || !strings.Contains(got[0].Data, "a=1&amp;b=2") {
		t.Fatalf("messages %+v", got)
	}
}

func TestSendRefusesUntrustedCertificate(t *testing.T) {
	srv := smtpfake.Start(t, "bot@example.com", "smtp-pass", smtpfake.Options{})
	s := &mail.Sender{} // system roots: the test's certificate is unknown
	err := s.Send(context.Background(), configOf(srv), mail.VerificationMail("en", "G", "u@example.com", "1", 10))
	if err == nil || len(srv.Messages()) != 0 {
		t.Fatalf("err %v, %d messages", err, len(srv.Messages()))
	}
}

func TestSendWrongPassword(t *testing.T) {
	srv := smtpfake.Start(t, "bot@example.com", "smtp-pass", smtpfake.Options{})
	c := configOf(srv)
	c.Token = "wrong"
	err := (&mail.Sender{Roots: srv.Roots}).Send(context.Background(), c, mail.VerificationMail("en", "G", "u@example.com", "1", 10))
	if err == nil || !strings.Contains(err.Error(), "535") {
		t.Fatalf("err %v", err)
	}
}

func TestSendTimesOut(t *testing.T) {
	// A server that accepts and never greets.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port, _ := strconv.ParseInt(strings.Split(ln.Addr().String(), ":")[1], 10, 64)
	c := mail.Config{Server: "127.0.0.1", Port: port}
	start := time.Now()
	err = (&mail.Sender{Timeout: 200 * time.Millisecond}).Send(context.Background(), c, mail.VerificationMail("en", "G", "u@example.com", "1", 10))
	if err == nil {
		t.Fatal("a silent server was taken for a delivery")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("send took %v", d)
	}
}

func TestSendNotConfigured(t *testing.T) {
	if err := (&mail.Sender{}).Send(context.Background(), mail.Config{}, mail.Message{To: "a@b.c"}); err != mail.ErrNotConfigured {
		t.Fatalf("err %v", err)
	}
}
