#include "https_test_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "server_process.hpp"

namespace plantstore::testing_support {

namespace {

void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    if (extension == nullptr) throw std::runtime_error("bad certificate extension");
    X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
}

X509* new_certificate(EVP_PKEY* key, const char* common_name, long serial) {
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
    return cert;
}

void write_pem(const std::filesystem::path& path, X509* cert, EVP_PKEY* key) {
    FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) throw std::runtime_error("cannot write " + path.string());
    if (cert != nullptr) PEM_write_X509(out, cert);
    if (key != nullptr) PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(out);
}

// Shared by both helpers below, so serials stay unique across certificates of one test binary.
long next_serial() {
    static long serial = 1;
    return serial++;
}

}  // namespace

void write_self_signed_certificate(const std::filesystem::path& cert_file,
                                   const std::filesystem::path& key_file,
                                   const std::string& common_name, bool rsa) {
    EVP_PKEY* key = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
    X509* cert = new_certificate(key, common_name.c_str(), next_serial());
    X509_set_issuer_name(cert, X509_get_subject_name(cert));
    X509_sign(cert, key, EVP_sha256());
    write_pem(cert_file, cert, nullptr);
    write_pem(key_file, nullptr, key);
    X509_free(cert);
    EVP_PKEY_free(key);
}

void write_test_pki(const std::filesystem::path& ca_cert, const std::filesystem::path& server_cert,
                    const std::filesystem::path& server_key) {
    EVP_PKEY* ca_key = EVP_EC_gen("P-256");
    X509* ca = new_certificate(ca_key, "plantstore test CA", next_serial());
    X509_set_issuer_name(ca, X509_get_subject_name(ca));
    add_extension(ca, ca, NID_basic_constraints, "critical,CA:TRUE");
    add_extension(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_extension(ca, ca, NID_subject_key_identifier, "hash");
    X509_sign(ca, ca_key, EVP_sha256());

    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* leaf = new_certificate(key, "127.0.0.1", next_serial());
    X509_set_issuer_name(leaf, X509_get_subject_name(ca));
    add_extension(leaf, ca, NID_basic_constraints, "critical,CA:FALSE");
    add_extension(leaf, ca, NID_subject_alt_name, "IP:127.0.0.1");
    add_extension(leaf, ca, NID_ext_key_usage, "serverAuth");
    add_extension(leaf, ca, NID_authority_key_identifier, "keyid:always");
    X509_sign(leaf, ca_key, EVP_sha256());

    write_pem(ca_cert, ca, nullptr);
    write_pem(server_cert, leaf, nullptr);
    write_pem(server_key, nullptr, key);
    X509_free(leaf);
    X509_free(ca);
    EVP_PKEY_free(key);
    EVP_PKEY_free(ca_key);
}

HttpsTestServer::HttpsTestServer(const std::filesystem::path& cert,
                                 const std::filesystem::path& key) {
    SSL_CTX* context = SSL_CTX_new(TLS_server_method());
    if (SSL_CTX_use_certificate_chain_file(context, cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(context, key.c_str(), SSL_FILETYPE_PEM) != 1) {
        SSL_CTX_free(context);
        throw std::runtime_error("cannot load the test server's certificate");
    }
    context_ = context;
    listen();
}

HttpsTestServer::HttpsTestServer() { listen(); }

void HttpsTestServer::listen() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error("the test HTTP server cannot listen");
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
}

HttpsTestServer::~HttpsTestServer() {
    stopping_ = true;
    thread_.join();
    ::close(listener_);
    if (context_ != nullptr) SSL_CTX_free(static_cast<SSL_CTX*>(context_));
}

std::string HttpsTestServer::url(const std::string& path) const {
    return std::string(context_ != nullptr ? "https" : "http") +
           "://127.0.0.1:" + std::to_string(port_) + path;
}

void HttpsTestServer::respond(int status, std::string body, std::vector<std::string> headers) {
    std::lock_guard lock(mutex_);
    status_ = status;
    body_ = std::move(body);
    headers_ = std::move(headers);
}

void HttpsTestServer::script(std::vector<TestReply> replies) {
    std::lock_guard lock(mutex_);
    script_ = std::move(replies);
}

std::string HttpsTestServer::last_request() {
    std::lock_guard lock(mutex_);
    return requests_received_.empty() ? std::string() : requests_received_.back();
}

std::vector<std::string> HttpsTestServer::all_requests() {
    std::lock_guard lock(mutex_);
    return requests_received_;
}

std::vector<int> HttpsTestServer::all_statuses() {
    std::lock_guard lock(mutex_);
    return statuses_answered_;
}

void HttpsTestServer::serve() {
    while (!stopping_) {
        pollfd ready{listener_, POLLIN, 0};
        if (::poll(&ready, 1, 50) != 1) continue;
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        ++connections_;
        timeval timeout{2, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        SSL* ssl = nullptr;
        if (context_ != nullptr) {
            ssl = SSL_new(static_cast<SSL_CTX*>(context_));
            SSL_set_fd(ssl, fd);
        }
        const auto read_some = [&](char* buffer, int size) {
            return ssl != nullptr ? SSL_read(ssl, buffer, size)
                                  : static_cast<int>(::recv(fd, buffer, size, 0));
        };
        if (ssl == nullptr || SSL_accept(ssl) == 1) {
            std::string pending;  // read beyond the request being answered
            for (int on_connection = 1; !stopping_; ++on_connection) {
                std::string request = std::move(pending);
                pending.clear();
                char buffer[4096];
                while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
                    const int got = read_some(buffer, sizeof buffer);
                    if (got <= 0) break;
                    request.append(buffer, static_cast<std::size_t>(got));
                }
                const auto head_end = request.find("\r\n\r\n");
                if (head_end == std::string::npos) break;
                // The body, up to the Content-Length the head announces (bounded).
                std::size_t length = 0;
                const auto field = request.find("Content-Length: ");
                if (field != std::string::npos && field < head_end) {
                    length = std::stoul(request.substr(field + 16));
                }
                const std::size_t end = head_end + 4 + std::min<std::size_t>(length, 65536);
                while (request.size() < end) {
                    const int got = read_some(buffer, sizeof buffer);
                    if (got <= 0) break;
                    request.append(buffer, static_cast<std::size_t>(got));
                }
                if (request.size() > end) {
                    pending = request.substr(end);
                    request.resize(end);
                }
                std::string response;
                int delay_ms = 0;
                bool keep = false;
                {
                    std::lock_guard lock(mutex_);
                    requests_received_.push_back(request);
                    TestReply reply{status_, headers_, 0};
                    if (!script_.empty()) {
                        reply = script_.front();
                        script_.erase(script_.begin());
                    }
                    statuses_answered_.push_back(reply.status);
                    delay_ms = reply.delay_ms;
                    keep = keep_alive_ &&
                           (max_per_connection_ == 0 || on_connection < max_per_connection_);
                    response = "HTTP/1.1 " + std::to_string(reply.status) +
                               " Test\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(body_.size()) + "\r\n";
                    // Closing silently after a keep-alive answer is what a receiver with a short
                    // idle time-out does: the client must not reuse the connection it closed.
                    if (!keep && !(keep_alive_ && silent_close_))
                        response += "Connection: close\r\n";
                    for (const std::string& header : reply.headers) response += header + "\r\n";
                    response += "\r\n" + body_;
                }
                for (int waited = 0; waited < delay_ms && !stopping_; waited += 10) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(10));
                }
                // Counted before the answer leaves: a client that has it may ask for the count
                // at once (counted after, the count lagged the answer now and then).
                ++requests_;
                if (ssl != nullptr) {
                    SSL_write(ssl, response.data(), static_cast<int>(response.size()));
                } else {
                    ::send(fd, response.data(), response.size(), MSG_NOSIGNAL);
                }
                if (!keep) break;
            }
            if (ssl != nullptr) SSL_shutdown(ssl);
        }
        if (ssl != nullptr) SSL_free(ssl);
        ::close(fd);
    }
}

void HttpsTestServer::keep_alive(int max_per_connection, bool silent_close) {
    std::lock_guard lock(mutex_);
    keep_alive_ = true;
    max_per_connection_ = max_per_connection;
    silent_close_ = silent_close;
}

}  // namespace plantstore::testing_support
