package dev.pushservice.segments;

import dev.pushservice.audit.AuditLog;
import dev.pushservice.platform.domain.InvalidInput;
import dev.pushservice.platform.domain.NotFound;
import dev.pushservice.platform.domain.Violation;
import dev.pushservice.platform.pagination.Page;
import dev.pushservice.platform.pagination.PageRequest;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.JsonNode;

/**
 * Segments and their immutable versions, and audience counts. What other features use:
 * {@link #activeVersion} (the version a new send snapshots; refuses archived segments),
 * {@link #version} (a snapshotted version, later), {@link #count} (devices a filter selects now).
 * To target devices by a filter in their own SQL, features use {@link FilterCompiler}. Thread-safe.
 */
@Service
public class SegmentService {

    private final SegmentRepository segments;
    private final FilterCompiler compiler;
    private final AuditLog audit;
    private final long exactLimit;
    private final long sampleDevices;
    /** The size sample (only counted) is this many times the filter's sample: cheap, and it sets the scale. */
    static final int SIZE_SAMPLE_FACTOR = 10;

    SegmentService(SegmentRepository segments, FilterCompiler compiler, AuditLog audit,
                   @Value("${push.segments.estimate-exact-limit:1000000}") long exactLimit,
                   @Value("${push.segments.estimate-sample-devices:10000}") long sampleDevices) {
        if (sampleDevices < 1000) throw new IllegalArgumentException("push.segments.estimate-sample-devices must be at least 1000");
        if (exactLimit < sampleDevices) {
            throw new IllegalArgumentException("push.segments.estimate-exact-limit must be at least push.segments.estimate-sample-devices");
        }
        this.segments = segments;
        this.compiler = compiler;
        this.audit = audit;
        this.exactLimit = exactLimit;
        this.sampleDevices = sampleDevices;
    }

    /** Creates a segment at version 1. Arguments are already validated. */
    @Transactional
    public SegmentView create(UUID appId, String name, String description, Filter filter) {
        UUID id = UUID.randomUUID();
        segments.insert(appId, id, name, description, FilterParser.toJson(filter));
        audit.record(appId, "segment.create", "segment", id,
                description == null ? List.of("name", "filter") : List.of("name", "description", "filter"));
        return get(appId, id);
    }

    public Page<SegmentView> list(UUID appId, PageRequest page) {
        return Page.of(segments.list(appId, page), page);
    }

    /** The segment with its current version; 404 when unknown or another app's. */
    public SegmentView get(UUID appId, UUID segmentId) {
        return segments.find(appId, segmentId).orElseThrow(() -> new NotFound("Segment"));
    }

    /**
     * What a PATCH changes: null fields keep their current value; {@code clearDescription} removes
     * the description. Validated by the caller.
     */
    public record Patch(String name, String description, boolean clearDescription, Filter filter) {
    }

    /**
     * Adds a version from the current one with {@code patch} applied. Every call adds a version, even
     * when nothing changes. 404 when unknown or another app's; 422 when archived.
     */
    @Transactional
    public SegmentView update(UUID appId, UUID segmentId, Patch patch) {
        SegmentView current = get(appId, segmentId);
        String name = patch.name() != null ? patch.name() : current.name();
        String description = patch.clearDescription() ? null
                : patch.description() != null ? patch.description() : current.description();
        JsonNode filter = patch.filter() != null ? FilterParser.toJson(patch.filter()) : current.filter();
        // locks the row, so concurrent PATCHes get distinct versions; empty when archived (even concurrently)
        int version = segments.bumpVersion(appId, segmentId, name, description)
                .orElseThrow(() -> new InvalidInput("Segment is archived",
                        List.of(new Violation("segment_id", "an archived segment cannot be changed"))));
        segments.insertVersion(segmentId, version, name, description, filter);
        List<String> changed = new java.util.ArrayList<>();
        if (patch.name() != null) changed.add("name");
        if (patch.description() != null || patch.clearDescription()) changed.add("description");
        if (patch.filter() != null) changed.add("filter");
        audit.record(appId, "segment.update", "segment", segmentId, changed);
        return get(appId, segmentId);
    }

    /** Archives (idempotent: archiving an archived segment answers it unchanged). 404 when unknown or another app's. */
    @Transactional
    public SegmentView archive(UUID appId, UUID segmentId) {
        segments.archive(appId, segmentId);
        SegmentView archived = get(appId, segmentId);
        audit.record(appId, "segment.archive", "segment", segmentId, List.of("status"));
        return archived;
    }

    /**
     * The current version of an active segment, for a new send to snapshot. A segment that is
     * unknown, another app's or archived is a 422 naming {@code field} (the caller's field, such as
     * {@code included_segment_ids[2]}), since the segment is a reference inside the caller's body.
     */
    public SegmentVersion activeVersion(UUID appId, UUID segmentId, String field) {
        SegmentView s = segments.find(appId, segmentId)
                .orElseThrow(() -> InvalidInput.of(field, "no segment " + segmentId + " in this app"));
        if (!"active".equals(s.status())) {
            throw InvalidInput.of(field, "segment " + segmentId + " is archived and cannot be used for new sends");
        }
        return new SegmentVersion(segmentId, s.version(), FilterParser.parse(s.filter(), "filter"), s.filter());
    }

    /**
     * The current version of the app's segment while it is active, for work that follows a segment over
     * time (journeys' segment entries); empty when the segment is unknown, another app's or archived.
     */
    public Optional<SegmentVersion> currentIfActive(UUID appId, UUID segmentId) {
        return segments.find(appId, segmentId)
                .filter(s -> "active".equals(s.status()))
                .map(s -> new SegmentVersion(segmentId, s.version(), FilterParser.parse(s.filter(), "filter"), s.filter()));
    }

    /** A given version of the app's segment (archived or not), e.g. the one a notification snapshotted. */
    public Optional<SegmentVersion> version(UUID appId, UUID segmentId, int version) {
        return segments.versionFilter(appId, segmentId, version)
                .map(json -> new SegmentVersion(segmentId, version, FilterParser.parse(json, "filter"), json));
    }

    /** How many devices a filter selects (the API's {@code POST /v1/segments/estimate} answer): counted exactly, or scaled from a sample. */
    public record Estimate(long estimatedRecipients, boolean exact) {
    }

    /**
     * Enabled, non-invalidated devices of the app that the filter selects now. Counted exactly unless
     * the app has more than {@code push.segments.estimate-exact-limit} such devices (an exact count reads
     * every device and, per event condition, every event row of its key: seconds at ten million). Then
     * from two samples of the {@code devices} table's pages ({@code TABLESAMPLE SYSTEM}, the same pages
     * while the table's pages stay, so asking again gives the same answer):
     * <ol>
     * <li>pages holding about {@value #SIZE_SAMPLE_FACTOR} × {@code push.segments.estimate-sample-devices}
     * devices of the whole table, only counted: the app's number of devices, scaled;
     * <li>some of those pages, holding about {@code push.segments.estimate-sample-devices} of the app's
     * devices, where the filter is evaluated (each device probes the event and user indexes): the share
     * of the app's devices that it selects.
     * </ol>
     * The estimate is the share times the number. Its cost follows the sample's size, not the app's.
     * docs/api-decisions.md ("Segments") says how close it comes.
     */
    public Estimate count(UUID appId, Filter filter) {
        long tableDevices = segments.estimatedDevices();
        if (tableDevices > exactLimit) {
            double sizePercent = Math.min(100, 100.0 * SIZE_SAMPLE_FACTOR * sampleDevices / tableDevices);
            long appSampled = segments.countSampledDevices(appId, sizePercent);
            double appDevices = appSampled * 100.0 / sizePercent;
            if (appDevices > exactLimit) {
                double percent = Math.min(sizePercent, sizePercent * sampleDevices / appSampled);
                SegmentRepository.SampleCount sample =
                        segments.countSampledAudience(appId, compiler.compileForFew(appId, filter, "sf"), percent);
                long estimate = sample.devices() == 0 ? 0 : Math.round(appDevices * sample.matched() / sample.devices());
                return new Estimate(estimate, false);
            }
        }
        return new Estimate(segments.countAudience(appId, compiler.compile(appId, filter)), true);
    }

    /** {@link #count} for a saved segment's current version (archived segments can still be estimated). */
    public Estimate count(UUID appId, UUID segmentId, String field) {
        SegmentView s = segments.find(appId, segmentId)
                .orElseThrow(() -> InvalidInput.of(field, "no segment " + segmentId + " in this app"));
        return count(appId, FilterParser.parse(s.filter(), "filter"));
    }
}
