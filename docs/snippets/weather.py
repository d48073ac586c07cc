from typing import Annotated, Literal

from tinytools import Injected, ToolCall, Toolbox, dispatch, tool

class WeatherService:                    # the application's own client (a stand-in here)
    def current(self, city: str, unit: str) -> dict:
        return {"city": city, "temperature": 18 if unit == "c" else 64, "unit": unit}

@tool
def get_weather(city: str, unit: Literal["c", "f"] = "c",
                *, service: Annotated[WeatherService, Injected]) -> dict:
    """Look up the current weather.

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit.
    """
    return service.current(city, unit)

tools = Toolbox([get_weather])
