// The JDK's built-in com.sun.net.httpserver as shipped: Nagle stays on unless the JVM runs
// with -Dsun.net.httpserver.nodelay=true. Arguments: the body's bytes (13), and the address
// to listen on (127.0.0.1). Prints "PORT <n>" once listening.
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.concurrent.Executors;

public class JdkHttpServer {
    public static void main(String[] args) throws Exception {
        int bodyBytes = args.length > 0 ? Integer.parseInt(args[0]) : 13;
        byte[] body = new byte[bodyBytes];
        Arrays.fill(body, (byte) 'x');
        String address = args.length > 1 ? args[1] : "127.0.0.1";
        HttpServer server = HttpServer.create(new InetSocketAddress(address, 0), 0);
        server.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            exchange.getResponseHeaders().set("Content-Type", "text/plain");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.start();
        System.out.println("PORT " + server.getAddress().getPort());
        System.out.flush();
    }
}
