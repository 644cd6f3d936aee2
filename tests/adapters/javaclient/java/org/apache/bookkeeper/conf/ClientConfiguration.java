package org.apache.bookkeeper.conf;

import java.util.HashMap;
import java.util.Map;

/** A stand-in recording what the adapter configures (same setter names as BookKeeper's). */
public class ClientConfiguration {
    public final Map<String, Object> settings = new HashMap<>();

    public ClientConfiguration setMetadataServiceUri(String uri) {
        settings.put("metadataServiceUri", uri);
        return this;
    }

    public ClientConfiguration setSpeculativeReadTimeout(int ms) {
        settings.put("speculativeReadTimeout", ms);
        return this;
    }

    public ClientConfiguration setBookieAddressResolverEnabled(boolean enabled) {
        settings.put("bookieAddressResolverEnabled", enabled);
        return this;
    }

    public ClientConfiguration setAddEntryTimeout(int seconds) {
        settings.put("addEntryTimeout", seconds);
        return this;
    }

    public ClientConfiguration setReadEntryTimeout(int seconds) {
        settings.put("readEntryTimeout", seconds);
        return this;
    }

    public ClientConfiguration setZkTimeout(int ms) {
        settings.put("zkTimeout", ms);
        return this;
    }

    public void setProperty(String key, Object value) {
        settings.put(key, value);
    }

    public Object get(String key) {
        return settings.get(key);
    }
}
