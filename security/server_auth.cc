#include "security/server_auth.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "security/identity.h"

namespace weft::security {
namespace {

using grpc::experimental::InterceptionHookPoints;

absl::string_view View(const grpc::string_ref& ref) {
  return absl::string_view(ref.data(), ref.size());
}

template <typename Multimap>
std::optional<absl::string_view> FindHeader(const Multimap& metadata, absl::string_view key) {
  for (const auto& [name, value] : metadata) {
    if (View(name) == key) return View(value);
  }
  return std::nullopt;
}

// The string, integer or message (its short text form) field `field` of `request`, for
// the audit's target.
std::string TargetOf(const google::protobuf::Message& request, absl::string_view field) {
  const google::protobuf::FieldDescriptor* descriptor =
      request.GetDescriptor()->FindFieldByName(std::string(field));
  if (descriptor == nullptr || descriptor->is_repeated()) return "";
  const google::protobuf::Reflection* reflection = request.GetReflection();
  switch (descriptor->cpp_type()) {
    case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
      return reflection->GetString(request, descriptor);
    case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(reflection->GetUInt64(request, descriptor));
    case google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE:  // e.g. a tuning scope
      return reflection->GetMessage(request, descriptor).ShortDebugString();
    default:
      return "";
  }
}

// Auth context properties that carry the caller from the AuthProcessor to the handler.
constexpr char kCallerName[] = "weft.caller.name";
constexpr char kCallerRole[] = "weft.caller.role";
constexpr char kCallerSource[] = "weft.caller.source";

std::optional<std::string> Property(const grpc::AuthContext& auth, const char* name) {
  std::vector<grpc::string_ref> values = auth.FindPropertyValues(name);
  if (values.empty()) return std::nullopt;
  return std::string(View(values.front()));
}

void LogAudit(const AuditRecord& record) {
  WEFT_LOG(INFO) << "audit who=" << record.who.name << " role=" << RoleName(record.who.role)
                 << " via=" << record.who.source << " method=" << record.method
                 << " target=" << record.target << " result=\""
                 << (record.result.ok() ? "OK" : record.result.ToString()) << "\"";
}

// One call's audit: the caller from its initial metadata, the target from its request,
// the result from the status it sends.
class AuditInterceptor final : public grpc::experimental::Interceptor {
 public:
  AuditInterceptor(grpc::experimental::ServerRpcInfo* info, const MethodRule* rule,
                   const Clock* clock, AuditSink* audit)
      : info_(info), rule_(rule), clock_(clock), audit_(audit) {
    record_.method = info->method();
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      record_.who = CallerOf(*info_->server_context());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() != nullptr && !rule_->target_field.empty()) {
      // gRPC hands the deserialized request as void*; every request of the services in
      // the rule table is a generated protobuf message.
      record_.target = TargetOf(
          *static_cast<const google::protobuf::Message*>(methods->GetRecvMessage()),
          rule_->target_field);
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      record_.at = clock_->Now();
      record_.result = FromGrpcStatus(methods->GetSendStatus());
      LogAudit(record_);
      if (absl::Status kept = audit_->Record(record_); !kept.ok()) {
        WEFT_LOG(ERROR) << "audit record lost method=" << record_.method
                        << " error=\"" << kept.message() << "\"";
        methods->ModifySendStatus(grpc::Status(
            grpc::StatusCode::UNAVAILABLE,
            absl::StrCat("the call ran (", record_.result.ok() ? "OK" : record_.result.ToString(),
                         ") but could not be written to the audit log: ", kept.message())));
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  const MethodRule* const rule_;
  const Clock* const clock_;
  AuditSink* const audit_;
  AuditRecord record_;
};

}  // namespace

Principal CallerOf(const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  Principal caller;
  if (auth == nullptr) return caller;
  std::optional<std::string> name = Property(*auth, kCallerName);
  std::optional<std::string> role = Property(*auth, kCallerRole);
  std::optional<std::string> source = Property(*auth, kCallerSource);
  if (!name.has_value() || !role.has_value() || !source.has_value()) return caller;
  caller.name = *std::move(name);
  caller.role = ParseRole(*role).value_or(Role::kNone);
  caller.source = *std::move(source);
  return caller;
}

AuthProcessor::AuthProcessor(std::shared_ptr<const TokenTable> tokens, const Clock* clock,
                             AuditSink* audit)
    : tokens_(std::move(tokens)), clock_(clock), audit_(audit) {}

grpc::Status AuthProcessor::Process(const InputMetadata& auth_metadata,
                                    grpc::AuthContext* context,
                                    OutputMetadata* /*consumed_auth_metadata*/,
                                    OutputMetadata* /*response_metadata*/) {
  std::optional<absl::string_view> path = FindHeader(auth_metadata, ":path");
  if (!path.has_value()) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "the call has no :path; refusing it (cannot authorize)");
  }
  absl::StatusOr<Principal> caller =
      Authenticate(*context, FindHeader(auth_metadata, "authorization"), tokens_.get());
  absl::Status allowed =
      caller.ok() ? Authorize(*path, *caller) : caller.status();
  if (allowed.ok()) {
    context->AddProperty(kCallerName, caller->name);
    context->AddProperty(kCallerRole, std::string(RoleName(caller->role)));
    context->AddProperty(kCallerSource, caller->source);
    return grpc::Status::OK;
  }

  const Principal who = caller.ok() ? *caller : Principal();
  WEFT_LOG(WARNING) << "call refused method=" << *path << " who=" << who.name
                    << " role=" << RoleName(who.role) << " peer_cn=" << PeerCommonName(*context)
                    << " reason=\"" << allowed.message() << "\"";
  const MethodRule* rule = FindMethodRule(*path);
  if (audit_ != nullptr && rule != nullptr && rule->mutating) {
    AuditRecord record{clock_->Now(), who, std::string(*path), "", allowed};
    LogAudit(record);
    if (absl::Status kept = audit_->Record(record); !kept.ok()) {
      WEFT_LOG(ERROR) << "audit record lost method=" << *path << " error=\"" << kept.message()
                      << "\"";
    }
  }
  return ToGrpcStatus(allowed);
}

AuditInterceptorFactory::AuditInterceptorFactory(const Clock* clock, AuditSink* audit)
    : clock_(clock), audit_(audit) {}

grpc::experimental::Interceptor* AuditInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  const MethodRule* rule = FindMethodRule(info->method());
  if (rule == nullptr || !rule->mutating) return nullptr;  // not audited
  return new AuditInterceptor(info, rule, clock_, audit_);
}

}  // namespace weft::security
