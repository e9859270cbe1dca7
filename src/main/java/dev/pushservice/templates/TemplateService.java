package dev.pushservice.templates;

import dev.pushservice.audit.AuditLog;
import java.util.List;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.json.JsonMapper;

/**
 * Templates: create, read, change (each change appends a new immutable version) and archive; and
 * {@link #forNotification}, the one way other features obtain template content. Changes to one
 * template are serialised by its row lock, so versions are gap-free and never collide.
 */
@Service
public class TemplateService {

    static final String DRAFT = "draft";
    static final String ARCHIVED = "archived";

    private final TemplateRepository templates;
    private final JsonMapper json;
    private final AuditLog audit;

    TemplateService(TemplateRepository templates, JsonMapper json, AuditLog audit) {
        this.templates = templates;
        this.json = json;
        this.audit = audit;
    }

    /**
     * The current content of a template that may create a notification now, for the notification
     * to snapshot. Inside a transaction the template is share-locked, so a concurrent archive waits
     * for that transaction: no notification is created from a template archived before it commits.
     *
     * @throws InvalidInput on field {@code template_id} when the app has no such template or it is archived
     */
    @Transactional(noRollbackFor = InvalidInput.class)
    public TemplateSnapshot forNotification(UUID appId, UUID templateId) {
        TemplateRepository.Row row = templates.find(appId, templateId, TemplateRepository.Lock.SHARE)
                .orElseThrow(() -> InvalidInput.of("template_id", "no template with this id exists in this app"));
        if (ARCHIVED.equals(row.status())) {
            throw InvalidInput.of("template_id", "the template is archived; archived templates cannot create new notifications");
        }
        TemplateContent content = content(row);
        CompiledContent compiled = CompiledContent.compile(content, (field, message) -> {
            throw new IllegalStateException("stored template " + templateId + " v" + row.version() + " does not compile: "
                    + field + ": " + message);
        });
        return new TemplateSnapshot(row.id(), row.version(), content, compiled);
    }

    @Transactional
    public TemplateView create(UUID appId, String name, String status, TemplateContent content) {
        UUID id = UUID.randomUUID();
        templates.insert(appId, id, name, status, json.writeValueAsString(content.toJson()));
        audit.record(appId, "template.create", "template", id, List.of("name", "status", "content"));
        return get(appId, id);
    }

    TemplateView get(UUID appId, UUID id) {
        return view(templates.find(appId, id, TemplateRepository.Lock.NONE).orElseThrow(TemplateService::notFound));
    }

    public Page<TemplateView.Summary> list(UUID appId, PageRequest page) {
        var rows = templates.list(appId, page.fetchSize(), page.offset()).stream()
                .map(r -> new TemplateView.Summary(r.id(), r.name(), r.status(), r.version(),
                        r.createdAt().toInstant(), r.updatedAt().toInstant()))
                .toList();
        return Page.of(rows, page);
    }

    /**
     * Appends a version with the supplied parts replaced (null: keep the current one). Always a new
     * version, even when nothing differs: the spec counts every update.
     */
    @Transactional
    public TemplateView update(UUID appId, UUID id, String name, String status, TemplateContent content) {
        TemplateRepository.Row current = templates.find(appId, id, TemplateRepository.Lock.UPDATE)
                .orElseThrow(TemplateService::notFound);
        templates.addVersion(appId, id, current.version() + 1,
                name != null ? name : current.name(),
                status != null ? status : current.status(),
                content != null ? json.writeValueAsString(content.toJson()) : current.content());
        List<String> changed = new java.util.ArrayList<>();
        if (name != null) changed.add("name");
        if (status != null) changed.add("status");
        if (content != null) changed.add("content");
        audit.record(appId, "template.update", "template", id, changed);
        return get(appId, id);
    }

    /** Archives; an already archived template stays as it is (no new version). */
    @Transactional
    public TemplateView.Deletion archive(UUID appId, UUID id) {
        TemplateRepository.Row current = templates.find(appId, id, TemplateRepository.Lock.UPDATE)
                .orElseThrow(TemplateService::notFound);
        int version = current.version();
        if (!ARCHIVED.equals(current.status())) {
            version++;
            templates.addVersion(appId, id, version, current.name(), ARCHIVED, current.content());
            audit.record(appId, "template.archive", "template", id, List.of("status"));
        }
        return new TemplateView.Deletion(id, true, ARCHIVED, version);
    }

    private TemplateView view(TemplateRepository.Row row) {
        return new TemplateView(row.id(), row.name(), row.status(), row.version(), content(row),
                row.createdAt().toInstant(), row.updatedAt().toInstant());
    }

    private TemplateContent content(TemplateRepository.Row row) {
        return TemplateContent.fromJson(json.readTree(row.content()));
    }

    private static NotFound notFound() {
        return new NotFound("Template");
    }
}
