// grpc-go's helloworld Greeter without protoc: the service is registered from a
// hand-written grpc.ServiceDesc ("helloworld.Greeter", unary "SayHello") whose request and
// reply are wrapperspb.StringValue, a message with one string field numbered 1, so on the
// wire it is helloworld's HelloRequest{name = 1} and HelloReply{message = 1}. A real
// grpc-go server (HTTP/2 by prior knowledge on plain TCP, its own flow control and BDP
// estimator) for the tests of nodelay's gRPC client.
//
// Server flags: --reply-bytes N (the reply's message is N bytes of 'x'; by default
// "Hello " + name, as helloworld answers), --delay-ms D (the handler waits D ms),
// --max-streams N (grpc.MaxConcurrentStreams: SETTINGS_MAX_CONCURRENT_STREAMS),
// --window BYTES (grpc.InitialWindowSize and InitialConnWindowSize: the windows the
// server advertises for what it receives; grpc-go ignores values under 64 KiB and turns
// its BDP estimator off when they are set), --status CODE (answer every call with that
// gRPC status code instead of a reply). Prints "PORT <n>" once listening on 127.0.0.1.
//
// With --client HOST:PORT the same binary is a grpc-go client instead: --calls N unary
// calls with --name as the request (and --window as the client's receive windows),
// --concurrent K of them in flight at once over --conns M connections (calls spread
// round-robin; each connection opened by one untimed call first). It prints "OK <calls>
// calls, reply <bytes> bytes, median <ms> ms, p75 <ms> ms, p90 <ms> ms, p99 <ms> ms, over
// <N> ms <count> calls" over the timed calls (<count>: those slower than --over-ms N) and
// exits 0, or the error and exits 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// greeter is the server side of helloworld.Greeter, as protoc-gen-go-grpc would declare it.
type greeter interface {
	SayHello(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)
}

const sayHelloMethod = "/helloworld.Greeter/SayHello"

var greeterDesc = grpc.ServiceDesc{
	ServiceName: "helloworld.Greeter",
	HandlerType: (*greeter)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "SayHello", Handler: sayHelloHandler}},
	Streams:     []grpc.StreamDesc{},
	Metadata:    "helloworld.proto",
}

func sayHelloHandler(srv any, ctx context.Context, decode func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	request := new(wrapperspb.StringValue)
	if err := decode(request); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(greeter).SayHello(ctx, request)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: sayHelloMethod}
	call := func(ctx context.Context, request any) (any, error) {
		return srv.(greeter).SayHello(ctx, request.(*wrapperspb.StringValue))
	}
	return interceptor(ctx, request, info, call)
}

type server struct {
	reply  *string // nil: "Hello " + name
	delay  time.Duration
	status codes.Code
}

func (s *server) SayHello(ctx context.Context, request *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.status != codes.OK {
		return nil, status.Error(s.status, "as asked by --status")
	}
	if s.reply == nil {
		return wrapperspb.String("Hello " + request.GetValue()), nil
	}
	return wrapperspb.String(*s.reply), nil
}

func main() {
	replyBytes := flag.Int("reply-bytes", -1, "reply message length in bytes (default: \"Hello \" + name)")
	delayMs := flag.Int("delay-ms", 0, "milliseconds the handler waits before it answers")
	maxStreams := flag.Uint("max-streams", 0, "SETTINGS_MAX_CONCURRENT_STREAMS (0: grpc-go's default, unlimited)")
	window := flag.Int("window", 0, "initial stream and connection windows in bytes (0: grpc-go's BDP-driven default)")
	statusCode := flag.Uint("status", 0, "answer every call with this gRPC status code")
	client := flag.String("client", "", "HOST:PORT: be a client of a Greeter instead of a server")
	calls := flag.Int("calls", 1, "client: unary calls to make")
	concurrent := flag.Int("concurrent", 1, "client: calls in flight at once")
	conns := flag.Int("conns", 1, "client: connections (grpc.ClientConn) the calls are spread over")
	overMs := flag.Int("over-ms", 0, "client: also count the calls that took longer than this many milliseconds")
	name := flag.String("name", "world", "client: the request's name")
	bind := flag.String("bind", "127.0.0.1", "address to listen on (a WAN test's server namespace)")
	flag.Parse()
	if *client != "" {
		os.Exit(runClient(*client, *calls, max(*concurrent, 1), max(*conns, 1), *overMs, *name, *window))
	}

	var options []grpc.ServerOption
	if *maxStreams > 0 {
		options = append(options, grpc.MaxConcurrentStreams(uint32(*maxStreams)))
	}
	if *window > 0 {
		options = append(options, grpc.InitialWindowSize(int32(*window)), grpc.InitialConnWindowSize(int32(*window)))
	}
	greeterServer := &server{delay: time.Duration(*delayMs) * time.Millisecond, status: codes.Code(*statusCode)}
	if *replyBytes >= 0 {
		reply := strings.Repeat("x", *replyBytes)
		greeterServer.reply = &reply
	}
	grpcServer := grpc.NewServer(options...)
	grpcServer.RegisterService(&greeterDesc, greeterServer)
	listener, err := net.Listen("tcp", net.JoinHostPort(*bind, "0"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("PORT %d\n", listener.Addr().(*net.TCPAddr).Port)
	panic(grpcServer.Serve(listener))
}

func runClient(address string, calls, concurrent, conns, overMs int, name string, window int) int {
	options := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if window > 0 {
		options = append(options, grpc.WithInitialWindowSize(int32(window)), grpc.WithInitialConnWindowSize(int32(window)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var connections []*grpc.ClientConn
	for range conns {
		connection, err := grpc.NewClient(address, options...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer connection.Close()
		// The call that opens the connection is not timed.
		if err := connection.Invoke(ctx, sayHelloMethod, wrapperspb.String(name), new(wrapperspb.StringValue)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		connections = append(connections, connection)
	}
	type outcome struct {
		took       time.Duration
		replyBytes int
		err        error
	}
	outcomes := make(chan outcome, calls)
	next := make(chan int, calls)
	for call := range calls {
		next <- call
	}
	close(next)
	var workers sync.WaitGroup
	for worker := range concurrent {
		workers.Add(1)
		go func() {
			defer workers.Done()
			connection := connections[worker%len(connections)]
			for range next {
				reply := new(wrapperspb.StringValue)
				started := time.Now()
				err := connection.Invoke(ctx, sayHelloMethod, wrapperspb.String(name), reply)
				outcomes <- outcome{time.Since(started), len(reply.GetValue()), err}
			}
		}()
	}
	workers.Wait()
	close(outcomes)
	replyBytes := 0
	var took []time.Duration
	for done := range outcomes {
		if done.err != nil {
			fmt.Fprintln(os.Stderr, done.err)
			return 1
		}
		took = append(took, done.took)
		replyBytes = done.replyBytes
	}
	slices.Sort(took)
	at := func(quantile float64) float64 {
		return float64(took[min(int(quantile*float64(len(took))), len(took)-1)].Microseconds()) / 1000
	}
	over := 0
	for _, call := range took {
		if call > time.Duration(overMs)*time.Millisecond {
			over++
		}
	}
	fmt.Printf("OK %d calls, reply %d bytes, median %.2f ms, p75 %.2f ms, p90 %.2f ms, p99 %.2f ms, over %d ms %d calls\n",
		calls, replyBytes, at(0.5), at(0.75), at(0.9), at(0.99), overMs, over)
	return 0
}
