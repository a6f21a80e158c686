// HTTP/1.1 behaviour over raw sockets: keep-alive, pipelining, chunked bodies, 100-continue,
// HTTP/1.0, time-outs and the connection cap.
#include <thread>

#include "fixture.hpp"

namespace plantstore::testing_support {
namespace {

using namespace std::chrono_literals;

class HttpProtocol : public ServerTest {};

std::string body_for(int id) {
    return R"({"id":)" + std::to_string(id) + R"(,"name":"p)" + std::to_string(id) + "\"}";
}

TEST_F(HttpProtocol, KeepAliveServesManyRequestsOnOneConnection) {
    start();
    HttpConnection connection(port());
    for (int id = 1; id <= 5; ++id) {
        connection.send_raw(plant_request(token, body_for(id)));
        const auto response = connection.read_response();
        ASSERT_TRUE(response);
        EXPECT_EQ(response->status, 200);
        EXPECT_EQ(response->body, R"({"name":"p)" + std::to_string(id) + "\"}");
    }
}

TEST_F(HttpProtocol, PipelinedRequestsAreAnsweredInOrder) {
    start();
    HttpConnection connection(port());
    std::string burst;
    for (int id = 1; id <= 10; ++id) burst += plant_request(token, body_for(id));
    burst += plant_request(token, "oops");
    connection.send_raw(burst);
    for (int id = 1; id <= 10; ++id) {
        const auto response = connection.read_response();
        ASSERT_TRUE(response) << id;
        EXPECT_EQ(response->body, R"({"name":"p)" + std::to_string(id) + "\"}");
    }
    const auto last = connection.read_response();
    ASSERT_TRUE(last);
    expect_error(*last, 400);
}

TEST_F(HttpProtocol, ChunkedRequestBody) {
    start();
    HttpConnection connection(port());
    connection.send_raw("POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                        "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "5\r\n{\"id\"\r\n12\r\n:1,\"name\":\"chunk\"}\r\n0\r\n\r\n");
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, R"({"name":"chunk"})");
}

TEST_F(HttpProtocol, ExpectContinueGets100BeforeTheBody) {
    start();
    HttpConnection connection(port());
    const std::string body = body_for(1);
    connection.send_raw("POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                        "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
                        "Content-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n");
    const auto interim = connection.read_response();
    ASSERT_TRUE(interim);
    EXPECT_EQ(interim->status, 100);
    connection.send_raw(body);
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
}

TEST_F(HttpProtocol, ExpectContinueWithBadCredentialsGetsTheErrorInstead) {
    start();
    HttpConnection connection(port());
    connection.send_raw(
        "POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ps_nope\r\n"
        "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 20\r\n\r\n");
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    expect_error(*response, 401);
    EXPECT_EQ(response->header("connection"), "close");
}

TEST_F(HttpProtocol, Http10ClientGetsHttp10AndTheConnectionCloses) {
    start();
    HttpConnection connection(port());
    const std::string body = body_for(1);
    connection.send_raw("POST /plants HTTP/1.0\r\nAuthorization: Bearer " + token +
                        "\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body);
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->version, 10U);
    EXPECT_TRUE(connection.closed_by_server());
}

TEST_F(HttpProtocol, SlowRequestGets408) {
    start({"--request-timeout-ms", "300"});
    HttpConnection connection(port());
    connection.send_raw("POST /plants HTTP/1.1\r\nHost: x\r\n");  // and then nothing
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    expect_error(*response, 408);
    EXPECT_TRUE(connection.closed_by_server());
}

TEST_F(HttpProtocol, BodyShorterThanItsLengthGets408) {
    start({"--request-timeout-ms", "300"});
    HttpConnection connection(port());
    connection.send_raw(plant_request(token, body_for(1)).substr(0, 150));
    const auto response = connection.read_response();
    ASSERT_TRUE(response);
    expect_error(*response, 408);
}

TEST_F(HttpProtocol, SlowClientDoesNotBlockOthers) {
    start({"--threads", "1"});
    HttpConnection slow(port());
    slow.send_raw("POST /plants HTTP/1.1\r\nHost: x\r\n");  // stalls mid-headers
    for (int id = 1; id <= 20; ++id) {
        EXPECT_EQ(post(body_for(id)).status, 200);
    }
    // The slow request is still open and unanswered while the others were served.
    slow.send_raw("Authorization: Bearer " + token +
                  "\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body_for(99).size()) + "\r\n\r\n" + body_for(99));
    const auto response = slow.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
}

TEST_F(HttpProtocol, IdleConnectionsAreClosedAfterTheIdleTimeout) {
    start({"--idle-timeout-ms", "200"});
    HttpConnection connection(port(), 5s);
    ASSERT_TRUE(connection.request("POST", "/nothing", "", {}));
    EXPECT_TRUE(connection.closed_by_server());
}

TEST_F(HttpProtocol, ConnectionsOverTheCapAreClosedAndOthersKeepWorking) {
    start({"--max-connections", "2", "--max-connections-per-client", "2", "--threads", "1"});
    HttpConnection first(port());
    HttpConnection second(port());
    first.send_raw(plant_request(token, body_for(1)));
    ASSERT_TRUE(first.read_response());
    second.send_raw(plant_request(token, body_for(2)));
    ASSERT_TRUE(second.read_response());
    HttpConnection third(port());
    EXPECT_TRUE(third.closed_by_server());
    first.send_raw(plant_request(token, body_for(3)));
    const auto still = first.read_response();
    ASSERT_TRUE(still);
    EXPECT_EQ(still->status, 200);
}

}  // namespace
}  // namespace plantstore::testing_support
