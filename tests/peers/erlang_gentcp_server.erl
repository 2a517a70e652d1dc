#!/usr/bin/env escript
%% An Erlang gen_tcp server speaking just enough HTTP/1.1 (keep-alive), run with escript:
%% it writes the response head and the body with two gen_tcp:send calls on a socket listened
%% with {nodelay, false} given explicitly (gen_tcp's default, but this way the VM really calls
%% setsockopt(TCP_NODELAY, 0)), so Nagle holds the body until the client's delayed ACK.
%% --nodelay applies the fix an Erlang user would: {nodelay, true} in the listen options
%% (accepted sockets inherit them). Usage: escript erlang_gentcp_server.erl [--nodelay]
%% [--body-bytes N]. An HTTP/1.0 request is answered and the connection closed. Prints "PORT <n>" once listening.
-mode(compile).

main(Args) ->
    {NoDelay, BodyBytes} = parse(Args, false, 13),
    Body = binary:copy(<<"x">>, BodyBytes),
    Head = iolist_to_binary(["HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Type: text/plain\r\n",
                             "Content-Length: ", integer_to_list(BodyBytes), "\r\n\r\n"]),
    {ok, Listen} = gen_tcp:listen(0, [binary, {active, false}, {reuseaddr, true}, {backlog, 128},
                                      {ip, {127, 0, 0, 1}}, {nodelay, NoDelay}]),
    {ok, Port} = inet:port(Listen),
    io:format("PORT ~B~n", [Port]),
    accept(Listen, Head, Body).

parse(["--nodelay" | Rest], _, Bytes) -> parse(Rest, true, Bytes);
parse(["--body-bytes", N | Rest], NoDelay, _) -> parse(Rest, NoDelay, list_to_integer(N));
parse([], NoDelay, Bytes) -> {NoDelay, Bytes};
parse([Other | _], _, _) -> io:format(standard_error, "unknown argument ~s~n", [Other]), halt(2).

accept(Listen, Head, Body) ->
    {ok, Socket} = gen_tcp:accept(Listen),
    Pid = spawn(fun() -> receive go -> serve(Socket, Head, Body, <<>>) end end),
    ok = gen_tcp:controlling_process(Socket, Pid),
    Pid ! go,
    accept(Listen, Head, Body).

serve(Socket, Head, Body, Pending) ->
    case binary:split(Pending, <<"\r\n\r\n">>) of
        [Request, Rest] ->
            case binary:match(Request, <<" HTTP/1.0\r\n">>) of
                nomatch ->
                    ok = gen_tcp:send(Socket, Head),
                    ok = gen_tcp:send(Socket, Body),
                    serve(Socket, Head, Body, Rest);
                _ ->
                    %% HTTP/1.0: answer without promising keep-alive, then close.
                    ok = gen_tcp:send(Socket, binary:replace(Head, <<"Connection: keep-alive\r\n">>, <<>>)),
                    ok = gen_tcp:send(Socket, Body),
                    gen_tcp:close(Socket)
            end;
        [_] ->
            case gen_tcp:recv(Socket, 0) of
                {ok, Data} -> serve(Socket, Head, Body, <<Pending/binary, Data/binary>>);
                {error, _} -> gen_tcp:close(Socket)
            end
    end.
